#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan, build-fuzz/) and runs each over a copy of its seed
# corpus, so the committed corpus never grows. Fails on any crash, timeout, OOM or sanitizer report.
#   fuzz/run.sh [--seconds N] [--runs N] [--jobs N] [--log-dir DIR] [--build-only] [harness...]
# Each harness stops at the first bound reached (default: --runs 20000); every harness when none named;
# --jobs harnesses run at once (default 1).
# --log-dir keeps each harness's libFuzzer log there (the recorded long runs quote their final lines).
# --build-only builds the harnesses and stops (scripts/test.sh builds them while the end-to-end tests run).
# The tokenizer fuzzer reads its vocabularies from TEMPERED_FUZZ_GGUF (see fuzz/tokenizer_fuzzer.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."

bound=()
harnesses=()
log_dir=""
jobs=1
build_only=0
while (($#)); do
  case "$1" in
    --seconds) bound+=(-max_total_time="$2"); shift 2 ;;
    --runs) bound+=(-runs="$2"); shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --log-dir) log_dir="$2"; shift 2 ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    -*) echo "fuzz/run.sh: unknown option $1" >&2; exit 2 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
((${#bound[@]})) || bound=(-runs=20000)
((${#harnesses[@]})) || harnesses=(gguf_fuzzer safetensors_fuzzer request_fuzzer jinja_fuzzer tokenizer_fuzzer)

# Per harness: the longest input (bytes), the per-input time limit (s) and the memory limit (MiB). A
# template may run the default JinjaLimits' 1M loop iterations: 0.6 s in a release build, 10-25 s
# under ASan on a busy machine, hence jinja's 60 s; the tokenizer holds Gemma's 262k-token vocabulary.
declare -A max_len=([gguf_fuzzer]=4096 [safetensors_fuzzer]=4096 [request_fuzzer]=8192 [jinja_fuzzer]=8192 [tokenizer_fuzzer]=512)
declare -A timeout=([gguf_fuzzer]=5 [safetensors_fuzzer]=5 [request_fuzzer]=10 [jinja_fuzzer]=60 [tokenizer_fuzzer]=10)
declare -A rss_mb=([gguf_fuzzer]=1024 [safetensors_fuzzer]=1024 [request_fuzzer]=2048 [jinja_fuzzer]=2560 [tokenizer_fuzzer]=3072)

# No hash_dir: -g1 would put the clone's path into every hash (scripts/build.sh).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
# The sources compile 8 to a translation unit, each module's apart (cmake/unity.cmake), as scripts/build.sh
# compiles the libraries: a cold fuzz build took 136 s on 2 cores file by file.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DTEMPERED_FUZZ=ON \
  -DTEMPERED_UNITY_BATCH="${TEMPERED_UNITY_BATCH:-8}" >/dev/null
ninja -C build-fuzz "${harnesses[@]}"
((build_only == 0)) || exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fuzz_one HARNESS: one libFuzzer run over a copy of the harness's corpus; its summary line goes to
# $work/HARNESS.summary, and a failure leaves $work/HARNESS.failed (the caller reports it).
fuzz_one() {
  local harness=$1 start=$SECONDS dict=() runs final
  mkdir -p "$work/$harness"
  cp -r "fuzz/corpus/$harness/." "$work/$harness/"
  [[ -f "fuzz/$harness.dict" ]] && dict=(-dict="fuzz/$harness.dict")
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "build-fuzz/$harness" "${bound[@]}" -max_len="${max_len[$harness]}" \
    -timeout="${timeout[$harness]}" -rss_limit_mb="${rss_mb[$harness]}" -artifact_prefix="$work/" \
    -print_final_stats=1 "${dict[@]}" "$work/$harness" >"$work/$harness.log" 2>&1 || touch "$work/$harness.failed"
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$harness.log" | grep -o '[0-9]*$' || echo 0)
  final=$(grep -E '^#[0-9]+.*(DONE|cov:)' "$work/$harness.log" | tail -n 1 || true)
  echo "$harness: ${runs:-0} executions in $((SECONDS - start)) s; ${final}" >"$work/$harness.summary"
}

for harness in "${harnesses[@]}"; do
  [[ -v "max_len[$harness]" ]] || { echo "fuzz/run.sh: unknown harness $harness" >&2; exit 2; }
done
# Up to --jobs harnesses at once; each is one process on one core, so on an idle machine a harness gets
# as many executions as it would alone.
for harness in "${harnesses[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  fuzz_one "$harness" &
done
wait
status=0
for harness in "${harnesses[@]}"; do
  if [[ -f "$work/$harness.failed" ]]; then
    status=1
    echo "== $harness FAILED; its log:"
    tail -n 60 "$work/$harness.log"
    mkdir -p fuzz/artifacts && cp "$work"/{crash,timeout,oom,leak,slow-unit}-* fuzz/artifacts/ 2>/dev/null || true
  fi
  cat "$work/$harness.summary"
  [[ -z "$log_dir" ]] || { mkdir -p "$log_dir" && cp "$work/$harness.log" "$log_dir/"; }
done
exit $status
