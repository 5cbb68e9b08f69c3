#!/usr/bin/env bash
# tempered and llama.cpp on the same GGUF file and thread count, in one run:
#   1. machine details (CPU, flags, memory, kernel, date, tempered's commit, llama.cpp's version)
#   2. memory bandwidth and the batch-1 decode bound   tempered membench --model M --json
#   3. the forward pass alone, llama.cpp               llama-bench -m M -t T -p 512 -n 128 -r 5 -o json
#      (if llama-bench crashes in the CPU backend's AMX / repacked-weight buffers and has no switch to turn
#      them off, the same pp/tg tests are timed by a one-slot llama-server --no-repack; the report says so)
#   4. the forward pass alone, tempered                tempered model-bench -m M -t T -p 512 -n 128 -r 5 --json
#   5. HTTP, 32 streams of 128-token prompts and 128-token answers, against llama-server and then
#      tempered serve, both loaded by tempered bench (the same client for both)
#   6. bench/results/side_by_side-<UTC date>.json (every tool's raw JSON + machine) and .md (the table)
#
# Usage: bench/side_by_side.sh [--model PATH] [--threads N] [--smoke] [--out-dir DIR] [--tempered BIN] [--label L]
#                              [--greedy]
#   --greedy   the HTTP requests send temperature 0 (default: no sampling value, each server's own defaults).
#              For the random-weight ds2-large-q8_0.gguf: its output rows of character pieces are zero, so
#              only greedy decoding keeps its text valid UTF-8, which llama-server needs (it answers 500
#              to any other output).
#   --label    names the reports side_by_side-L-<UTC date> (e.g. the model: ds2-large)
#   --smoke    tiny sizes (-p 32 -n 8 -r 1; 4 streams x 4 requests x 16 tokens) to check that the script
#              works, not to measure; writes to a temporary directory unless --out-dir is given.
# llama.cpp is not built by this project: LLAMA_CPP_BIN names a directory holding llama-bench and
# llama-server. Without it the llama.cpp steps are skipped, and the report says so.
# tempered: --tempered, else $TEMPERED_BIN, else build/tempered. Needs python3 (stdlib only).
# Exit status: 0 when every step that ran succeeded; 1 otherwise (the report is still written).
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODEL="$HOME/.cache/tempered/models/SmolLM2-135M-Instruct.Q4_1.gguf"
THREADS=2
SMOKE=0
OUT_DIR=""
TEMPERED="${TEMPERED_BIN:-$REPO/build/tempered}"
LABEL=""
GREEDY=0

while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --smoke) SMOKE=1; shift ;;
    --out-dir) OUT_DIR="$2"; shift 2 ;;
    --tempered) TEMPERED="$2"; shift 2 ;;
    --label) LABEL="$2"; shift 2 ;;
    --greedy) GREEDY=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "side_by_side.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[[ "$TEMPERED" = /* ]] || TEMPERED="$PWD/$TEMPERED"

if [[ $SMOKE == 1 ]]; then
  PROMPT=32 GEN=8 REPS=1 STREAMS=4 REQUESTS=4 HTTP_PROMPT=16 HTTP_MAX=16 WARMUP=1 TRIAD=(--mib 16 -r 2)
else
  PROMPT=512 GEN=128 REPS=5 STREAMS=32 REQUESTS=96 HTTP_PROMPT=128 HTTP_MAX=128 WARMUP=4 TRIAD=()
fi
# KV cache of both servers: every stream's prompt and answer, with room for a prompt that tokenizes long.
CONTEXT=$((STREAMS * (HTTP_PROMPT + HTTP_MAX + 64)))

STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/side_by_side.XXXXXX")
if [[ -z "$OUT_DIR" ]]; then
  if [[ $SMOKE == 1 ]]; then OUT_DIR="$WORK"; else OUT_DIR="$REPO/bench/results"; fi
fi
NAME="side_by_side-${LABEL:+$LABEL-}$STAMP"
[[ $SMOKE == 1 ]] && NAME="side_by_side-smoke-$STAMP"
REPORT=(python3 "$REPO/bench/side_by_side_report.py")
FAILED=0
SERVER_PID=""
LLAMA_BENCH_FLAGS=()
LLAMA_BENCH_REPLACED=""
LLAMA_SERVER_EXTRA=()

step() { echo "== $*" >&2; }
note() { echo "side_by_side: $*" >&2; echo "$*" >>"$WORK/notes.txt"; }
fail() { note "FAILED: $*"; FAILED=1; }

stop_server() {
  if [[ -n "$SERVER_PID" ]]; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=""
  fi
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM

# start_server LOG PORT COMMAND...: starts it in the background; status 0 once /health answers 200.
start_server() {
  local log="$1" port="$2"
  shift 2
  "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  if ! "${REPORT[@]}" wait-health "http://127.0.0.1:$port/health" --pid "$SERVER_PID" --timeout 300; then
    stop_server
    tail -n 20 "$log" >&2
    return 1
  fi
}

# http_load NAME PORT: tempered bench against the server on PORT, into $WORK/http_NAME.json.
http_load() {
  local command=("$TEMPERED" bench --url "http://127.0.0.1:$2" --concurrency "$STREAMS" --requests "$REQUESTS"
                 --prompt-tokens "$HTTP_PROMPT" --max-tokens "$HTTP_MAX" --stream --warmup "$WARMUP" --json)
  [[ $GREEDY == 1 ]] && command+=(--temperature 0)
  HTTP_COMMAND="tempered bench --url http://127.0.0.1:PORT ${command[*]:4}"
  "${command[@]}" >"$WORK/http_$1.json" 2>"$WORK/http_$1.log"
}

if [[ ! -x "$TEMPERED" ]]; then
  echo "side_by_side.sh: no tempered binary at $TEMPERED (build it, or pass --tempered BIN)" >&2
  exit 1
fi
if [[ ! -f "$MODEL" ]]; then
  echo "side_by_side.sh: no model at $MODEL (scripts/pull_model.py smollm2-135m-instruct, or --model PATH)" >&2
  exit 1
fi

HAVE_LLAMA=0
if [[ -z "${LLAMA_CPP_BIN:-}" ]]; then
  note "LLAMA_CPP_BIN is not set: the llama.cpp steps (llama-bench, llama-server) are SKIPPED"
elif [[ ! -x "$LLAMA_CPP_BIN/llama-bench" || ! -x "$LLAMA_CPP_BIN/llama-server" ]]; then
  note "LLAMA_CPP_BIN=$LLAMA_CPP_BIN has no executable llama-bench and llama-server: the llama.cpp steps are SKIPPED"
else
  HAVE_LLAMA=1
fi

read -r LOAD _ </proc/loadavg
CPUS=$(nproc)
if python3 -c "import sys; sys.exit(0 if float('$LOAD') > 0.25 * $CPUS else 1)"; then
  note "the machine was busy at the start (load average $LOAD on $CPUS CPUs): figures are noisy; on a shared 2-core machine llama.cpp's OpenMP threads were seen to slow down far more than tempered's pool"
fi

step "1/6 machine details"
"${REPORT[@]}" machine --repo "$REPO" --llama-bin "$([[ $HAVE_LLAMA == 1 ]] && echo "$LLAMA_CPP_BIN")" \
  >"$WORK/machine.json" || fail "machine details"

step "2/6 memory bandwidth (tempered membench)"
"$TEMPERED" membench --model "$MODEL" --threads "$THREADS" "${TRIAD[@]}" --json \
  >"$WORK/membench.json" 2>"$WORK/membench.log" || fail "tempered membench (see $WORK/membench.log)"

step "3/6 llama.cpp's forward pass (llama-bench)"
if [[ $HAVE_LLAMA == 1 ]]; then
  llama_bench() {
    "$LLAMA_CPP_BIN/llama-bench" -m "$MODEL" -t "$THREADS" -p "$PROMPT" -n "$GEN" -r "$REPS" -o json \
      "${LLAMA_BENCH_FLAGS[@]}" >"$WORK/llama_bench.json" 2>"$WORK/llama_bench.log"
  }
  llama_bench
  status=$?
  if [[ $status != 0 ]]; then
    # Some builds crash (SIGSEGV, or SIGILL in the AMX kernels under a hypervisor) in the CPU backend's
    # extra buffer types: AMX and repacked weights. llama-server can turn them off (--no-repack);
    # llama-bench only in builds whose --help lists such a switch.
    note "llama-bench exited with status $status with default flags (132: illegal instruction, 139: segfault)"
    LLAMA_SERVER_EXTRA=(--no-repack)
    switch=$("$LLAMA_CPP_BIN/llama-bench" --help 2>&1 | grep -oE -- '--no-repack|--no-extra-bufts' | head -n 1)
    if [[ -n "$switch" ]]; then
      note "retrying llama-bench with $switch 1; llama-server gets --no-repack to match"
      LLAMA_BENCH_FLAGS=("$switch" 1)
      llama_bench || fail "llama-bench, also with ${LLAMA_BENCH_FLAGS[*]} (see $WORK/llama_bench.log)"
    else
      note "this llama-bench has no switch for the extra buffer types: llama.cpp's pp/tg come from the own timings of a one-slot llama-server --no-repack instead, and the HTTP run uses --no-repack too"
      LLAMA_BENCH_REPLACED="crashed (status $status); pp/tg timed by llama-server --no-repack instead"
      PORT=$("${REPORT[@]}" free-port)
      if start_server "$WORK/llama_timing_server.log" "$PORT" "$LLAMA_CPP_BIN/llama-server" -m "$MODEL" \
           -t "$THREADS" -tb "$THREADS" -np 1 -c $((PROMPT + GEN + 64)) --host 127.0.0.1 --port "$PORT" \
           "${LLAMA_SERVER_EXTRA[@]}"; then
        "${REPORT[@]}" llama-timings "http://127.0.0.1:$PORT" --prompt "$PROMPT" --gen "$GEN" --reps "$REPS" \
          >"$WORK/llama_server_timings.json" || fail "llama-server timings"
        stop_server
      else
        fail "llama-server --no-repack did not start (see $WORK/llama_timing_server.log)"
      fi
    fi
  fi
else
  echo "skipped (no llama.cpp)" >&2
fi

step "4/6 tempered model-bench"
"$TEMPERED" model-bench --model "$MODEL" --threads "$THREADS" -p "$PROMPT" -n "$GEN" -r "$REPS" --json \
  >"$WORK/model_bench.json" 2>"$WORK/model_bench.log" || fail "tempered model-bench (see $WORK/model_bench.log)"

step "5/6 HTTP: $STREAMS streams, $REQUESTS requests of $HTTP_PROMPT prompt + $HTTP_MAX output tokens"
HTTP_COMMAND=""
if [[ $HAVE_LLAMA == 1 ]]; then
  # llama_http: llama-server with $LLAMA_SERVER_EXTRA, loaded; fails if it does not start, if the load
  # fails, or if the server is gone afterwards (a crash part-way through).
  llama_http() {
    PORT=$("${REPORT[@]}" free-port)
    start_server "$WORK/llama_server.log" "$PORT" "$LLAMA_CPP_BIN/llama-server" -m "$MODEL" -t "$THREADS" \
      -tb "$THREADS" -np "$STREAMS" -c "$CONTEXT" --host 127.0.0.1 --port "$PORT" "${LLAMA_SERVER_EXTRA[@]}" || return 1
    echo "llama-server ready on port $PORT" >&2
    http_load llama "$PORT"
    local load_status=$?
    kill -0 "$SERVER_PID" 2>/dev/null || { wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""; return 1; }
    stop_server
    return $load_status
  }
  if ! llama_http; then
    if [[ ${#LLAMA_SERVER_EXTRA[@]} == 0 ]]; then
      note "llama-server failed with default flags (see $WORK/llama_server.log); retrying with --no-repack"
      cp "$WORK/llama_server.log" "$WORK/llama_server.default_flags.log"
      LLAMA_SERVER_EXTRA=(--no-repack)
      llama_http || fail "llama-server HTTP run, also with --no-repack (see $WORK/llama_server.log, $WORK/http_llama.log)"
    else
      fail "llama-server HTTP run (see $WORK/llama_server.log, $WORK/http_llama.log)"
    fi
  fi
fi
PORT=$("${REPORT[@]}" free-port)
if start_server "$WORK/tempered_serve.log" "$PORT" "$TEMPERED" serve --model "$MODEL" --threads "$THREADS" \
     --host 127.0.0.1 --port "$PORT" --kv-cache-tokens "$CONTEXT" --max-running "$STREAMS"; then
  echo "tempered serve ready on port $PORT" >&2
  http_load tempered "$PORT" || fail "tempered bench against tempered serve (see $WORK/http_tempered.log)"
  stop_server
else
  fail "tempered serve did not start (see $WORK/tempered_serve.log)"
fi

step "6/6 report"
export MODEL THREADS SMOKE PROMPT GEN REPS STREAMS REQUESTS HTTP_PROMPT HTTP_MAX WARMUP CONTEXT WORK HTTP_COMMAND
export LLAMA_BENCH_FLAGS_TEXT="" LLAMA_SERVER_FLAGS_TEXT=""
if [[ $HAVE_LLAMA == 1 ]]; then
  LLAMA_BENCH_FLAGS_TEXT="${LLAMA_BENCH_REPLACED:-"-t $THREADS -p $PROMPT -n $GEN -r $REPS ${LLAMA_BENCH_FLAGS[*]:-}"}"
  LLAMA_SERVER_FLAGS_TEXT="-t $THREADS -tb $THREADS -np $STREAMS -c $CONTEXT ${LLAMA_SERVER_EXTRA[*]:-}"
fi
export TEMPERED_SERVE_FLAGS_TEXT="--threads $THREADS --kv-cache-tokens $CONTEXT --max-running $STREAMS"
python3 - >"$WORK/run.json" <<'EOF'
import json, os
env = os.environ
notes = open(os.path.join(env["WORK"], "notes.txt")).read().splitlines() if os.path.exists(
    os.path.join(env["WORK"], "notes.txt")) else []
print(json.dumps({
    "model": env["MODEL"], "threads": int(env["THREADS"]), "smoke": env["SMOKE"] == "1",
    "prompt_tokens": int(env["PROMPT"]), "gen_tokens": int(env["GEN"]), "repetitions": int(env["REPS"]),
    "http_concurrency": int(env["STREAMS"]), "http_requests": int(env["REQUESTS"]),
    "http_prompt_tokens": int(env["HTTP_PROMPT"]), "http_max_tokens": int(env["HTTP_MAX"]),
    "http_warmup": int(env["WARMUP"]), "kv_cache_tokens": int(env["CONTEXT"]),
    "http_command": env["HTTP_COMMAND"], "llama_bench_flags": env["LLAMA_BENCH_FLAGS_TEXT"],
    "llama_server_flags": env["LLAMA_SERVER_FLAGS_TEXT"], "tempered_serve_flags": env["TEMPERED_SERVE_FLAGS_TEXT"],
    "work_dir": env["WORK"], "notes": notes}, indent=2))
EOF
mkdir -p "$OUT_DIR"
"${REPORT[@]}" summarise --dir "$WORK" --json "$OUT_DIR/$NAME.json" --md "$OUT_DIR/$NAME.md" || FAILED=1
echo >&2
echo "wrote $OUT_DIR/$NAME.json and $OUT_DIR/$NAME.md (logs in $WORK)" >&2
exit "$FAILED"
