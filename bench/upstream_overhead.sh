#!/usr/bin/env bash
# What the upstream mode's front costs: `tempered bench` straight to an upstream tempered, and through a
# front (`tempered serve --upstream`) over that same upstream, alternated ROUNDS times so that the VM's drift
# hits both alike. Two loads: 32 streams (output tok/s) and 1 stream (TTFT p50). On one machine the front's
# own CPU (rendering, detokenizing, the output stages, the HTTP relay) competes with the upstream's
# compute, which a front in front of GPUs does not: this is the worse case. Measures, asserts nothing.
# Usage: bench/upstream_overhead.sh [OUT_DIR] [ROUNDS]   (binary: $TEMPERED_BIN, default build/tempered;
#        model: $MODEL, default SmolLM2 Q4_1 in the model cache)
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$(mktemp -d)}; ROUNDS=${2:-3}
BIN=${TEMPERED_BIN:-$REPO/build/tempered}
MODEL=${MODEL:-$HOME/.cache/tempered/models/SmolLM2-135M-Instruct.Q4_1.gguf}
UPSTREAM_PORT=41100 FRONT_PORT=41101
mkdir -p "$OUT"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT

serve() {  # serve PORT LOG ARGS...: starts a server and waits for /health
  local port=$1 log=$2; shift 2
  "$BIN" serve --model "$MODEL" --host 127.0.0.1 --port "$port" "$@" > "$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 240); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && return 0; sleep 0.5; done
  echo "upstream_overhead: the server on port $port did not start (log: $log)" >&2
  exit 1
}

serve "$UPSTREAM_PORT" "$OUT/upstream.log" --threads 2 --kv-cache-tokens 10240 --max-running 32 \
  --sampling-defaults openai
serve "$FRONT_PORT" "$OUT/front.log" --upstream "http://127.0.0.1:$UPSTREAM_PORT"

# load NAME CONCURRENCY REQUESTS: one bench run against each side, the side order alternating per round.
load() {
  local name=$1 concurrency=$2 requests=$3 round=$4 sides=(direct front)
  ((round % 2 == 0)) && sides=(front direct)
  for side in "${sides[@]}"; do
    local port=$UPSTREAM_PORT
    [[ $side == front ]] && port=$FRONT_PORT
    # Both sides send the same prompts to the same upstream: without a flush the second finds them cached.
    curl -sf -X POST "http://127.0.0.1:$UPSTREAM_PORT/flush_cache" > /dev/null
    "$BIN" bench --url "http://127.0.0.1:$port" --concurrency "$concurrency" --requests "$requests" \
      --prompt-tokens 128 --max-tokens 128 --temperature 0.7 --stream --warmup 2 --seed 7 --json > "$OUT/${name}_${side}_$round.json"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]));
print(sys.argv[2], sys.argv[3], sys.argv[4], "output tok/s %.1f" % r["output_token_throughput"],
      "ttft p50 ms %.1f" % r["ttft_ms"]["p50"])' "$OUT/${name}_${side}_$round.json" "$name" "$side" "$round"
  done
}

for round in $(seq "$ROUNDS"); do
  load streams32 32 96 "$round"
  load stream1 1 12 "$round"
done
echo "runs in $OUT"
