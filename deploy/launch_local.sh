#!/usr/bin/env bash
# One host, several tempered workers behind sgl-model-gateway (PyPI sglang-router):
#   deploy/launch_local.sh --workers 3                         gateway + 3 workers (cache_aware)
#   deploy/launch_local.sh --prefill 1 --decode 1              gateway + 1 prefill + 1 decode server
# Workers listen on --worker-port, +1, +2, ...; prefill servers also take KV transfers on
# --bootstrap-port, +1, ... The gateway waits until every worker answers /health. Logs go to --log-dir
# (worker-N.log, prefill-N.log, decode-N.log, gateway.log). Ctrl-C (or SIGTERM) stops every process.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: deploy/launch_local.sh [options] [-- extra tempered serve flags]
  --model NAME|PATH        model for every worker (default: smollm2-135m-instruct)
  --workers N              regular workers (default: 2; ignored with --prefill/--decode)
  --prefill P --decode D   prefill/decode disaggregation: P prefill and D decode servers
  --policy NAME            gateway policy: cache_aware (default), round_robin, power_of_two, random
  --gateway-port PORT      the gateway's port (default: 30000)
  --metrics-port PORT      the gateway's Prometheus port (default: 29000)
  --worker-port PORT       the first worker's port (default: 8001)
  --bootstrap-port PORT    the first prefill server's KV transfer port (default: 9001)
  --threads N              compute threads per worker (default: 0 = every core)
  --host HOST              address everything binds (default: 127.0.0.1)
  --log-dir DIR            where the logs go (default: ./tempered-logs)
  --tempered PATH          the tempered binary (default: build/tempered)
  --python PATH            a python with sglang-router installed (default: python3)
USAGE
}

model=smollm2-135m-instruct
workers=2
prefill=0
decode=0
policy=cache_aware
gateway_port=30000
metrics_port=29000
worker_port=8001
bootstrap_port=9001
threads=0
host=127.0.0.1
log_dir=./tempered-logs
tempered=build/tempered
python=python3
extra=()

while [[ $# -gt 0 ]]; do
    case "$1" in
        --model) model=$2; shift 2 ;;
        --workers) workers=$2; shift 2 ;;
        --prefill) prefill=$2; shift 2 ;;
        --decode) decode=$2; shift 2 ;;
        --policy) policy=$2; shift 2 ;;
        --gateway-port) gateway_port=$2; shift 2 ;;
        --metrics-port) metrics_port=$2; shift 2 ;;
        --worker-port) worker_port=$2; shift 2 ;;
        --bootstrap-port) bootstrap_port=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --host) host=$2; shift 2 ;;
        --log-dir) log_dir=$2; shift 2 ;;
        --tempered) tempered=$2; shift 2 ;;
        --python) python=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) echo "launch_local.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done

if (( (prefill > 0) != (decode > 0) )); then
    echo "launch_local.sh: disaggregation needs both --prefill and --decode" >&2
    exit 2
fi
[[ -x $tempered ]] || { echo "launch_local.sh: no tempered binary at $tempered (--tempered)" >&2; exit 2; }
"$python" -c 'import sglang_router' 2>/dev/null \
    || { echo "launch_local.sh: $python cannot import sglang_router (pip install sglang-router==0.3.2)" >&2; exit 2; }
mkdir -p "$log_dir"

pids=()
stop_all() {
    trap - INT TERM EXIT
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_worker NAME PORT [tempered serve flags...]: one worker in the background, its log in log_dir.
start_worker() {
    local name=$1 port=$2
    shift 2
    "$tempered" serve --model "$model" --host "$host" --port "$port" --threads "$threads" "$@" "${extra[@]}" \
        > "$log_dir/$name.log" 2>&1 &
    pids+=($!)
    echo "$name: http://$host:$port (log $log_dir/$name.log)"
}

wait_healthy() {
    local url=$1
    for _ in $(seq 1 600); do
        if curl -fsS "$url/health" > /dev/null 2>&1; then return 0; fi
        sleep 0.5
    done
    echo "launch_local.sh: $url did not become healthy; see $log_dir" >&2
    return 1
}

gateway_args=(--host "$host" --port "$gateway_port" --prometheus-port "$metrics_port" --policy "$policy"
              --health-check-interval-secs 5 --health-failure-threshold 2 --retry-max-retries 3)
urls=()
if (( prefill > 0 )); then
    gateway_args+=(--pd-disaggregation)
    for ((i = 0; i < prefill; i++)); do
        port=$((worker_port + i))
        start_worker "prefill-$i" "$port" --disaggregation-mode prefill \
            --disaggregation-bootstrap-port $((bootstrap_port + i))
        urls+=("http://$host:$port")
        gateway_args+=(--prefill "http://$host:$port" $((bootstrap_port + i)))
    done
    for ((i = 0; i < decode; i++)); do
        port=$((worker_port + prefill + i))
        # The decode server fetches KV only from the prefill servers started here (their host, each bootstrap port).
        allowed=()
        for ((j = 0; j < prefill; j++)); do allowed+=("$host:$((bootstrap_port + j))"); done
        start_worker "decode-$i" "$port" --disaggregation-mode decode --disaggregation-allowed-prefill "${allowed[@]}"
        urls+=("http://$host:$port")
        gateway_args+=(--decode "http://$host:$port")
    done
else
    for ((i = 0; i < workers; i++)); do
        port=$((worker_port + i))
        start_worker "worker-$i" "$port"
        urls+=("http://$host:$port")
    done
    gateway_args+=(--worker-urls "${urls[@]}")
fi

for url in "${urls[@]}"; do wait_healthy "$url"; done
"$python" -m sglang_router.launch_router "${gateway_args[@]}" > "$log_dir/gateway.log" 2>&1 &
pids+=($!)
echo "gateway: http://$host:$gateway_port ($policy; log $log_dir/gateway.log). Ctrl-C stops everything."
wait -n "${pids[@]}" || true
echo "launch_local.sh: a process exited; stopping the rest (see $log_dir)" >&2
