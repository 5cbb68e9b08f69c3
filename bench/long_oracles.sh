#!/usr/bin/env bash
# The full-length runs of the oracle and brute-force tests that CI runs a bounded part of (scripts/test.sh):
# every prompt's 64-token greedy continuation against llama.cpp (LlamaOracle, */FamilyOracle), and the grammar
# masks against brute force over Qwen2.5's vocabulary on the whole corpus and the Qwen random walks, in the
# release build and, with --asan, in the ASan/UBSan one. About 15 minutes on the shared 2-core machine
# (release); record the output in bench/results/ with the date. Usage: bench/long_oracles.sh [--asan]
set -euo pipefail
cd "$(dirname "$0")/.."
binary=build/tempered_unit_tests
[[ "${1:-}" == --asan ]] && binary=build-asan/tempered_unit_tests
[[ -x "$binary" ]] || { echo "long_oracles: $binary is missing (scripts/build.sh)" >&2; exit 1; }
export TEMPERED_LONG_ORACLES=1 TEMPERED_REQUIRE_MODELS=1
"$binary" --gtest_filter='LlamaOracle.GreedyContinuations*:*/FamilyOracle.*Greedy*'
"$binary" --gtest_filter='GrammarCorpusMask.*:GrammarTokenMask.QwenVocabularyMatchesBruteForceOnRandomWalks'
