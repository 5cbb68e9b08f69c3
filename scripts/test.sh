#!/usr/bin/env bash
# Fresh machine -> every test: install, build (release and ASan/UBSan), fetch the real models,
# run the unit tests (ctest) and the end-to-end tests (pytest) against the real binary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
python3 scripts/pull_model.py smollm2-135m-instruct gemma3-270m qwen2.5-coder-0.5b-instruct \
  deepseek-r1-distill-qwen-7b-header
export TEMPERED_REQUIRE_MODELS=1
# Tiny random-weight Qwen3, Llama 3 and R1-template Qwen2 GGUFs (real vocabularies from the files above): regenerated, never
# committed; model_tiny_families_test checks their sha256 against the one its llama.cpp reference recorded.
.venv/bin/python scripts/fixtures/make_tiny_models.py --out build/tiny-models
# Tiny DeepSeek-2 GGUFs (MLA with and without q_lora, MoE with sigmoid/softmax routing): tests/fixtures/model/deepseek2.
.venv/bin/python scripts/fixtures/make_deepseek2_models.py --out build/tiny-models

echo "== format (.clang-format): every tracked C++ file as clang-format-14 writes it"
git ls-files '*.cpp' '*.h' | xargs clang-format-14 --dry-run --Werror

echo "== release build and unit tests"
scripts/build.sh release
(cd build && ctest --output-on-failure -j2)

echo "== ASan/UBSan build and unit tests"
scripts/build.sh asan
# The long llama.cpp oracle runs (perplexity, 64-token continuations, the float32 copies; Qwen2 and the tiny
# families' greedy; Gemma 3's 320 steps and 2,000-token prompt; the FamilyOracle runs, of which only Gemma 3's
# quantized top-1 stays to run its forward pass under the sanitizers) repeat the
# code the shorter real-model tests cover; under the sanitizers they would take many minutes.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j2 \
  -E 'LlamaOracle\.(Perplexity|.*Greedy|Dequantized)|(Qwen2|Smollm2)/FamilyOracle|Qwen2Oracle\.GreedyContinuations|Gemma3Oracle\.(Greedy|TopTwenty)|TinyFamilies\.Greedy|FamilyOracle\.(Float32|Perplexity|QuantizedGreedy)')

echo "== fuzz: each libFuzzer harness 18 s (100k to 800k inputs in all, by load) over its seed corpus under ASan/UBSan (fuzz/README.md)"
fuzz/run.sh --seconds 18

echo "== end-to-end tests"
TEMPERED_BIN=build/tempered .venv/bin/python -m pytest -q tests/e2e
echo "== bench/side_by_side.sh --smoke (checks that the script runs; measures nothing)"
TEMPERED_BIN=build/tempered bench/side_by_side.sh --smoke
echo "== malformed GGUF corpus under ASan"
TEMPERED_BIN=build-asan/tempered .venv/bin/python -m pytest -q tests/e2e/test_gguf_inspect.py
