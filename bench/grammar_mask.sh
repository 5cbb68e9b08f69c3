#!/usr/bin/env bash
# Grammar mask time per decode step on Qwen2.5's 151,936-token vocabulary, for every schema of the corpus
# (tests/fixtures/grammar/schemas.json): p50 / p99 / max per schema and overall, schema compile times, and
# the steps that met a context for the first time apart. One thread, pinned to one core when taskset exists.
# Goals (issue 12): p50 <= 50 us, p99 <= 1 ms. Measures, asserts nothing. Writes
# bench/results/grammar_mask-<UTC date>.txt.
# Usage: bench/grammar_mask.sh [WALKS] [STEPS]   (defaults 8 walks of up to 96 steps per schema; model: $MODEL)
set -euo pipefail
cd "$(dirname "$0")/.."
WALKS=${1:-8}; STEPS=${2:-96}
MODEL=${MODEL:-$HOME/.cache/tempered/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}
BIN=${GRAMMAR_BENCH_BIN:-build/tempered_grammar_bench}
[[ -x $BIN ]] || { echo "grammar_mask.sh: $BIN missing (scripts/build.sh release)" >&2; exit 1; }
out=bench/results/grammar_mask-$(date -u +%Y-%m-%dT%H%M%SZ).txt
pin=(); command -v taskset > /dev/null && pin=(taskset -c 0)
{
  echo "# bench/grammar_mask.sh $WALKS $STEPS   ($(git rev-parse --short HEAD 2> /dev/null || echo '?'), $(date -u))"
  echo "# machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
  echo "# model: $MODEL"
  "${pin[@]}" "$BIN" --model "$MODEL" --walks "$WALKS" --steps "$STEPS"
} | tee "$out"
echo "wrote $out"
