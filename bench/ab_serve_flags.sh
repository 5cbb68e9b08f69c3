#!/usr/bin/env bash
# One tempered binary under the same `tempered bench` load with different `serve` flags, alternated ROUNDS times
# so that the VM's drift hits every configuration alike: 32 streams of 128-token prompts and 128-token answers
# (new requests arrive as others finish, so prompts are prefilled while others decode). Prints per run output
# tok/s, TTFT p50 and ITL p50/p99, then the medians per configuration. Measures, asserts nothing.
# Usage: bench/ab_serve_flags.sh MODEL ROUNDS OUT_DIR "FLAGS A" "FLAGS B" ...
#   env: TEMPERED (default build/tempered), ENDPOINT (default chat), CONCURRENCY (32), REQUESTS (96)
set -uo pipefail
MODEL=$1; ROUNDS=$2; OUT=$3; shift 3
TEMPERED=${TEMPERED:-build/tempered}; ENDPOINT=${ENDPOINT:-chat}; CONCURRENCY=${CONCURRENCY:-32}
REQUESTS=${REQUESTS:-96}
mkdir -p "$OUT"
configs=("$@")
for round in $(seq "$ROUNDS"); do
  for index in "${!configs[@]}"; do
    port=$((46000 + round * 10 + index))
    # shellcheck disable=SC2086  # the flags are words
    "$TEMPERED" serve --model "$MODEL" --threads 2 --port "$port" --kv-cache-tokens 12288 --max-running "$CONCURRENCY" \
      ${configs[$index]} > "$OUT/serve_${index}_$round.log" 2>&1 &
    pid=$!
    for _ in $(seq 240); do curl -sf "localhost:$port/health" > /dev/null && break; sleep 0.5; done
    "$TEMPERED" bench --url "http://127.0.0.1:$port" --endpoint "$ENDPOINT" --concurrency "$CONCURRENCY" \
      --requests "$REQUESTS" --prompt-tokens 128 --max-tokens 128 --stream --warmup 4 --seed 7 --json \
      > "$OUT/run_${index}_$round.json"
    kill "$pid"; wait "$pid" 2> /dev/null
    python3 - "$OUT/run_${index}_$round.json" "${configs[$index]}" "$round" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"[{sys.argv[2]}] round {sys.argv[3]}: output {d['output_token_throughput']:.1f} tok/s, TTFT p50 "
      f"{d['ttft_ms']['p50']:.0f} ms, ITL p50 {d['itl_ms']['p50']:.1f} ms, p99 {d['itl_ms']['p99']:.1f} ms")
EOF
  done
done
python3 - "$OUT" "${configs[@]}" <<'EOF'
import json, statistics, sys
from pathlib import Path
out, configs = Path(sys.argv[1]), sys.argv[2:]
print("\n| serve flags | output tok/s | TTFT p50 ms | ITL p50 ms | ITL p99 ms |\n|---|---:|---:|---:|---:|")
for index, flags in enumerate(configs):
    runs = [json.load(open(p)) for p in sorted(out.glob(f"run_{index}_*.json"))]
    med = lambda f: statistics.median(f(r) for r in runs)
    print(f"| `{flags or '(none)'}` | {med(lambda r: r['output_token_throughput']):.1f} | "
          f"{med(lambda r: r['ttft_ms']['p50']):.0f} | {med(lambda r: r['itl_ms']['p50']):.1f} | "
          f"{med(lambda r: r['itl_ms']['p99']):.1f} |")
EOF
