#!/usr/bin/env bash
# The newcomer's two commands timed on a fresh clone with an empty compiler cache (CCACHE_DISABLE=1):
#   bench/fresh_clone_time.sh run    scripts/run.sh until the served model answers its first chat request
#                                    (the model cache and pip's cache empty too: TEMPERED_HOME and
#                                    PIP_CACHE_DIR point into the scratch directory, so the model is downloaded)
#   bench/fresh_clone_time.sh test   scripts/test.sh to its end (model and pip caches as they are: the issue's
#                                    limit is about the compiler cache), printing its stage times
# The Debian packages are whatever this machine has: apt's time is not in these numbers unless they are
# missing. Writes the log to OUT (default: a file in the scratch directory) and prints the seconds.
# Usage: bench/fresh_clone_time.sh run|test [--out LOG] [--port P]
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
what=${1:-}
shift || true
OUT="" PORT=8471
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --port) PORT="$2"; shift 2 ;;
    *) echo "fresh_clone_time.sh: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
[[ "$what" == run || "$what" == test ]] || { echo "usage: fresh_clone_time.sh run|test [--out LOG]" >&2; exit 1; }
scratch=$(mktemp -d /tmp/fresh-clone.XXXXXX)
OUT=${OUT:-$scratch/$what.log}
git clone -q "$REPO" "$scratch/tempered"
cd "$scratch/tempered"
export CCACHE_DISABLE=1
echo "fresh clone of $(git rev-parse --short HEAD) at $scratch/tempered; $(nproc) cores; CCACHE_DISABLE=1" | tee "$OUT"
start=$(date +%s.%N)
elapsed() { python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')"; }

if [[ "$what" == test ]]; then
  status=0
  scripts/test.sh >>"$OUT" 2>&1 || status=$?
  grep '^== ' "$OUT" | grep ': [0-9]* s' || true
  echo "scripts/test.sh exited $status after $(elapsed) s" | tee -a "$OUT"
  exit "$status"
fi

export TEMPERED_HOME="$scratch/home" PIP_CACHE_DIR="$scratch/pip-cache"
scripts/run.sh --port "$PORT" >>"$OUT" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
request='{"messages":[{"role":"user","content":"What is the capital of France?"}],"max_tokens":16}'
until answer=$(curl -sf -m 30 http://127.0.0.1:$PORT/v1/chat/completions -H 'Content-Type: application/json' \
                 -d "$request" 2>/dev/null); do
  kill -0 "$server" 2>/dev/null || { echo "scripts/run.sh ended before answering (log: $OUT)" >&2; exit 1; }
  sleep 1
done
echo "first answer after $(elapsed) s: $answer" | tee -a "$OUT"
