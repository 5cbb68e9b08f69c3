#!/usr/bin/env bash
# Two tempered binaries (e.g. before and after a refactor) under the same `tempered bench` load, alternated
# ROUNDS times so that the VM's drift hits both alike; prints output tok/s per run. Measures, asserts nothing.
# Usage: bench/ab_two_binaries.sh BIN_A BIN_B [OUT_DIR] [ROUNDS]   (model: $MODEL, default SmolLM2 Q4_1)
set -uo pipefail
BIN_A=$1; BIN_B=$2; OUT=${3:-$(mktemp -d)}; ROUNDS=${4:-3}
MODEL=${MODEL:-$HOME/.cache/tempered/models/SmolLM2-135M-Instruct.Q4_1.gguf}
mkdir -p "$OUT"
for round in $(seq "$ROUNDS"); do
  for side in a b; do
    bin=$BIN_A; [[ $side == b ]] && bin=$BIN_B
    port=$((41000 + round * 2)); [[ $side == b ]] && port=$((port + 1))
    "$bin" serve --model "$MODEL" --threads 2 --host 127.0.0.1 --port "$port" --kv-cache-tokens 10240 \
      --max-running 32 > "$OUT/serve_${side}_$round.log" 2>&1 &
    pid=$!
    for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.5; done
    "$BIN_B" bench --url "http://127.0.0.1:$port" --concurrency 32 --requests 96 --prompt-tokens 128 \
      --max-tokens 128 --stream --warmup 4 --seed 7 --json > "$OUT/${side}_$round.json"
    kill "$pid"; wait "$pid" 2> /dev/null
    python3 -c 'import json,sys; print(sys.argv[2], sys.argv[3], "output tok/s",
                json.load(open(sys.argv[1]))["output_token_throughput"])' "$OUT/${side}_$round.json" "$side" "$round"
  done
done
