#!/usr/bin/env bash
# One model two ways: a GGUF file and a Hugging Face directory (matrices converted at load, --quantize), with the
# same binary, alternated ROUNDS times so the VM's drift hits both alike. Per round and side:
#   load     `tempered serve` from start to a 200 on /health (seconds), and its resident memory then (VmRSS, MB),
#            with a 1,024-token KV pool on both sides so that the weights dominate;
#   speed    `tempered model-bench -p 512 -n 128 -r REPS --json` (pp512 and tg128 tok/s, the mean of REPS runs).
# Prints one line per run and a summary of medians with the directory/GGUF ratio. Measures, asserts nothing.
# Usage: bench/gguf_vs_directory.sh GGUF DIR [OUT_DIR] [ROUNDS]
#   env: TEMPERED (default build/tempered), QUANTIZE (default q8_0), THREADS (default 2), REPS (default 3),
#        LOAD_ONLY=1 (skip the speed runs: for files of different types, whose speeds are not comparable)
set -uo pipefail
GGUF=$1; DIR=$2; OUT=${3:-$(mktemp -d)}; ROUNDS=${4:-3}
TEMPERED=${TEMPERED:-build/tempered}; QUANTIZE=${QUANTIZE:-q8_0}; THREADS=${THREADS:-2}; REPS=${REPS:-3}
mkdir -p "$OUT"

# load_once SIDE MODEL ROUND: start serve, time it to its first healthy answer, read its VmRSS, stop it.
load_once() {
  local side=$1 model=$2 round=$3 port=$((42000 + round * 2)) start pid seconds rss
  [[ $side == dir ]] && port=$((port + 1))
  start=$(date +%s.%N)
  "$TEMPERED" serve --model "$model" --quantize "$QUANTIZE" --threads "$THREADS" --host 127.0.0.1 --port "$port" \
    --kv-cache-tokens 1024 > "$OUT/serve_${side}_$round.log" 2>&1 &
  pid=$!
  for _ in $(seq 2400); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.05; done
  seconds=$(printf "%.3f" "$(echo "$(date +%s.%N) - $start" | bc)")
  rss=$(awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2> /dev/null
  echo "{\"side\": \"$side\", \"round\": $round, \"load_seconds\": $seconds, \"rss_mb\": $rss}" >> "$OUT/load.jsonl"
  echo "$side round $round: load ${seconds}s, RSS ${rss} MB"
}

# bench_once SIDE MODEL ROUND: one model-bench run, its JSON kept.
bench_once() {
  local side=$1 model=$2 round=$3
  "$TEMPERED" model-bench --model "$model" --quantize "$QUANTIZE" --threads "$THREADS" -p 512 -n 128 -r "$REPS" \
    --json > "$OUT/bench_${side}_$round.json" 2> "$OUT/bench_${side}_$round.log"
  python3 - "$OUT/bench_${side}_$round.json" "$side" "$round" <<'EOF'
import json, sys
tests = {t["name"]: t for t in json.load(open(sys.argv[1]))["tests"]}
print(sys.argv[2], "round", sys.argv[3] + ":", ", ".join(f"{n} {t['mean_tokens_per_s']:.1f} tok/s" for n, t in tests.items()))
EOF
}

for round in $(seq "$ROUNDS"); do
  load_once gguf "$GGUF" "$round"; load_once dir "$DIR" "$round"
  [[ ${LOAD_ONLY:-0} == 1 ]] || { bench_once gguf "$GGUF" "$round"; bench_once dir "$DIR" "$round"; }
done

python3 - "$OUT" <<'EOF'
import json, statistics, sys
from pathlib import Path
out = Path(sys.argv[1])
loads = [json.loads(line) for line in (out / "load.jsonl").read_text().splitlines()]
def median(side, key):
    return statistics.median(r[key] for r in loads if r["side"] == side)
speeds = {}
for path in sorted(out.glob("bench_*_*.json")):
    side = path.name.split("_")[1]
    for test in json.load(open(path))["tests"]:
        speeds.setdefault((side, test["name"]), []).append(test["mean_tokens_per_s"])
print(f"\n| | GGUF | directory | directory / GGUF |\n|---|---:|---:|---:|")
for key, unit in (("load_seconds", "s"), ("rss_mb", "MB")):
    g, d = median("gguf", key), median("dir", key)
    print(f"| {key} (median) | {g:.2f} {unit} | {d:.2f} {unit} | {d / g:.3f} |")
for name in sorted({n for _, n in speeds}):
    g, d = statistics.median(speeds[("gguf", name)]), statistics.median(speeds[("dir", name)])
    print(f"| {name} tok/s (median of {len(speeds[('gguf', name)])} rounds) | {g:.1f} | {d:.1f} | {d / g:.3f} |")
EOF
