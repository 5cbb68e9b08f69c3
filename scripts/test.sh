#!/usr/bin/env bash
# Fresh machine -> every test: install, build (release and ASan/UBSan), fetch the real models,
# run the unit tests (ctest) and the end-to-end tests (pytest) against the real binary.
set -euo pipefail
cd "$(dirname "$0")/.."
# stage NAME: closes the previous stage with its elapsed seconds and opens the next, so every CI log shows
# where the 30-minute budget goes (done: the last one, and the total).
stage_name="install (Debian packages)"
stage_start=$SECONDS
stage() {
  echo "== ${stage_name}: $((SECONDS - stage_start)) s (total $SECONDS s)"
  stage_name=$1
  stage_start=$SECONDS
  [[ "$1" == done ]] || echo "== $1"
}
scripts/install_deps.sh test
# The venv and the model pulls wait on the network and the release build on the CPU, so they overlap: the
# pulls run in the background from here, and their log and time are printed once the build is done.
pulls_log=$(mktemp)
(
  start=$SECONDS
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
  python3 scripts/pull_model.py smollm2-135m-instruct gemma3-270m qwen2.5-coder-0.5b-instruct \
    deepseek-r1-distill-qwen-7b-header
  echo "venv and model pulls took $((SECONDS - start)) s (beside the release build)"
) >"$pulls_log" 2>&1 &
pulls=$!
trap 'kill "$pulls" 2>/dev/null || true; rm -f "$pulls_log"' EXIT
export TEMPERED_REQUIRE_MODELS=1

stage "format (.clang-format): every tracked C++ file as clang-format-14 writes it"
git ls-files '*.cpp' '*.h' | xargs clang-format-14 --dry-run --Werror

stage "release build"
scripts/build.sh release
stage "venv and model pulls: what is left after the release build"
pulls_status=0
wait "$pulls" || pulls_status=$?
cat "$pulls_log"
((pulls_status == 0)) || { echo "test.sh: the venv or a model pull failed" >&2; exit "$pulls_status"; }
stage "fixtures: tiny model GGUFs"
# Tiny random-weight Qwen3, Llama 3 and R1-template Qwen2 GGUFs (real vocabularies from the files above): regenerated, never
# committed; model_tiny_families_test checks their sha256 against the one its llama.cpp reference recorded.
# Both writers are single-threaded Python and write different files: one per core.
.venv/bin/python scripts/fixtures/make_tiny_models.py --out build/tiny-models &
tiny_models=$!
# Tiny DeepSeek-2 GGUFs (MLA with and without q_lora, MoE with sigmoid/softmax routing): tests/fixtures/model/deepseek2;
# then tiny gpt-oss (float32 and MXFP4 experts, a synthetic vocabulary with harmony's tokens): tests/fixtures/model/gpt_oss.
.venv/bin/python scripts/fixtures/make_deepseek2_models.py --out build/tiny-models
.venv/bin/python scripts/fixtures/make_gpt_oss_models.py --out build/tiny-models
wait "$tiny_models"
# SmolLM2 as a Hugging Face directory (F32, in 3 shards with their index), and with its linear layers in DeepSeek's block-scaled FP8 beside
# NumPy's dequantization of them: what hf_model_test and test_hf_directories read (the other models' copies
# are recorded runs, bench/results).
.venv/bin/python scripts/fixtures/make_hf_directories.py --model smollm2 --shards 3 --out build/hf-models/smollm2-f32 &
hf_f32=$!
.venv/bin/python scripts/fixtures/make_hf_directories.py --model smollm2 --fp8 --out build/hf-models/smollm2-fp8 \
  --fp8-reference build/hf-models/smollm2-fp8-reference.safetensors
wait "$hf_f32"
for tiny in tiny-qwen3moe ds2-moe-f32 ds2-moe-softmax-f32 ds2-qlora-f32 ds2-noqlora-f32; do
  .venv/bin/python scripts/fixtures/make_hf_directories.py --gguf "build/tiny-models/$tiny.gguf" \
    --out "build/hf-models/$tiny-hf"
done

stage "release unit tests"
# No unit test takes 10 s; one that hangs is stopped at 5 minutes (named, with its output) instead of holding CI to its
# limit, and is run once more, so a rare hang shows in the log without failing the run on its own.
ctest_bounds=(--timeout 300 --repeat after-timeout:2)
(cd build && ctest --output-on-failure -j2 "${ctest_bounds[@]}")

stage "ASan/UBSan build"
# What the ASan stages run: the unit tests, and the binary for the malformed-GGUF corpus (the benches and
# the grammar bridge serve the release e2e tests and bench/ only).
scripts/build.sh asan tempered tempered_unit_tests
stage "ASan/UBSan unit tests"
# The long llama.cpp oracle runs (perplexity, 64-token continuations, the float32 copies; Qwen2 and the tiny
# families' greedy; Gemma 3's 320 steps and 2,000-token prompt; the FamilyOracle runs, of which only Gemma 3's
# quantized top-1 stays to run its forward pass under the sanitizers) repeat the
# code the shorter real-model tests cover; under the sanitizers they would take many minutes.
# The brute-force checks of grammar masks over Qwen's 151,936 tokens run in full in release: under ASan
# GrammarTokenMask's Qwen random walks (54 s) are left out (ToyVocabularyMatchesBruteForce runs the same
# trie / generator / brute-force walk there), and GrammarCorpusMask (86 s) compares 12 states over every
# fifth schema (TEMPERED_GRAMMAR_MASK_STATES), which keeps the Qwen trie and the generator's shared
# classifications under the sanitizers.
# Three more run in release only: a layering probe that compiles cli/run against its folders (a build check,
# 21 s under ASan), and the real-model engine runs through preemption and prefix reuse (29 s and 15 s), whose
# code the shorter engine tests cover under the sanitizers.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 TEMPERED_GRAMMAR_MASK_STATES=12 ctest --output-on-failure -j2 "${ctest_bounds[@]}" \
  -E 'LlamaOracle\.(Perplexity|.*Greedy|Dequantized)|(Qwen2|Smollm2)/FamilyOracle|Qwen2Oracle\.GreedyContinuations|Gemma3Oracle\.(Greedy|TopTwenty)|TinyFamilies\.Greedy|FamilyOracle\.(Float32|Perplexity|QuantizedGreedy)|GrammarTokenMask\.QwenVocabularyMatchesBruteForceOnRandomWalks|layering\.cli_run_without_server|EngineRealModel\.(SmallKvPoolCompletesEveryRequestThroughPreemption|PrefixReuseReportsCachedTokensAndKeepsTheOutput)')

stage "end-to-end tests (the fuzz harnesses build beside them, at the lowest priority)"
# The end-to-end tests keep about 1.4 of the 2 cores busy (they wait on servers starting and on clients); the
# fuzz build (clang, about 2 CPU-minutes) takes the rest at nice 19 instead of a stage of its own.
fuzz_build_log=$(mktemp)
nice -n 19 fuzz/run.sh --build-only >"$fuzz_build_log" 2>&1 &
fuzz_build=$!
trap 'kill "$pulls" "$fuzz_build" 2>/dev/null || true; rm -f "$pulls_log" "$fuzz_build_log"' EXIT
TEMPERED_BIN=build/tempered .venv/bin/python -m pytest -q --durations=25 tests/e2e

stage "fuzz: each libFuzzer harness 18 s, two at a time (100k to 800k inputs in all, by load) over its seed corpus under ASan/UBSan (fuzz/README.md)"
fuzz_build_status=0
wait "$fuzz_build" || fuzz_build_status=$?
((fuzz_build_status == 0)) || { cat "$fuzz_build_log"; echo "test.sh: the fuzz build failed" >&2; exit 1; }
fuzz/run.sh --seconds 18 --jobs 2
stage "bench/side_by_side.sh --smoke (checks that the script runs; measures nothing)"
TEMPERED_BIN=build/tempered bench/side_by_side.sh --smoke
stage "malformed GGUF corpus under ASan"
TEMPERED_BIN=build-asan/tempered .venv/bin/python -m pytest -q tests/e2e/test_gguf_inspect.py
stage done
