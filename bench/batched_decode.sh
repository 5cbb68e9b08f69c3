#!/usr/bin/env bash
# Batched decode of B sequences at once, tempered against llama.cpp on the same GGUF, without HTTP: the
# engines' own throughput at B streams. For models whose output llama-server's chat parser rejects
# (random-weight fixtures: it aborts the stream, so its HTTP figures count only the streams that survive).
#   llama.cpp: llama-batched-bench -npl B -npp P -ntg G  (S_TG: decode tok/s over the B sequences)
#   tempered:  tempered model-bench --batch-decode B --batch-prompt-tokens P -n G  (tgG_batchB)
# Usage: LLAMA_CPP_BIN=DIR bench/batched_decode.sh --model PATH [--streams 32] [--prompt 128] [--gen 128]
#        [--threads 2] [--tempered BIN]. Prints both tools' output and one summary line; measures nothing else.
set -euo pipefail
MODEL="" STREAMS=32 PROMPT=128 GEN=128 THREADS=2 TEMPERED="${TEMPERED_BIN:-build/tempered}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --streams) STREAMS="$2"; shift 2 ;;
    --prompt) PROMPT="$2"; shift 2 ;;
    --gen) GEN="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --tempered) TEMPERED="$2"; shift 2 ;;
    *) echo "batched_decode.sh: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
[[ -n "$MODEL" && -f "$MODEL" ]] || { echo "batched_decode.sh: --model FILE is required" >&2; exit 1; }
[[ -n "${LLAMA_CPP_BIN:-}" && -x "$LLAMA_CPP_BIN/llama-batched-bench" ]] ||
  { echo "batched_decode.sh: LLAMA_CPP_BIN must hold llama-batched-bench" >&2; exit 1; }
echo "date: $(date -u +%FT%TZ); load: $(cut -d' ' -f1-3 /proc/loadavg); tempered $(git rev-parse --short HEAD)"
context=$((STREAMS * (PROMPT + GEN) + 256))
llama_out=$(LD_LIBRARY_PATH="$LLAMA_CPP_BIN" "$LLAMA_CPP_BIN/llama-batched-bench" -m "$MODEL" -t "$THREADS" \
  -c "$context" -b 2048 -ub 512 -npp "$PROMPT" -ntg "$GEN" -npl "$STREAMS" 2>/dev/null)
echo "$llama_out"
tempered_out=$("$TEMPERED" model-bench -m "$MODEL" -t "$THREADS" -p 0 -n "$GEN" --batch-decode "$STREAMS" \
  --batch-prompt-tokens "$PROMPT" -r 3 --json)
echo "$tempered_out"
python3 - "$llama_out" "$tempered_out" "$STREAMS" <<'PY'
import json, sys
llama_lines = [l for l in sys.argv[1].splitlines() if l.strip().startswith("|") and l.count("|") > 8]
row = [c.strip() for c in llama_lines[-1].strip("|").split("|")]  # PP TG B N_KV T_PP S_PP T_TG S_TG T S
llama_tg = float(row[7])
tests = json.loads(sys.argv[2])["tests"]
ours = [t for t in tests if "batch" in t["name"]][0]
print(f"summary: {sys.argv[3]} streams decode, tempered {ours['mean_tokens_per_s']:.1f} tok/s, "
      f"llama.cpp {llama_tg:.1f} tok/s, ratio {ours['mean_tokens_per_s'] / llama_tg:.2f}")
PY
