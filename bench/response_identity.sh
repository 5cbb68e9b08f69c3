#!/usr/bin/env bash
# Two tempered binaries' responses to the same requests, compared byte for byte with ids, `created` and
# unrequested seeds masked: 13 kinds (chat and completions whole and streamed, n=2, logprobs, echo, stops, a
# greedy request without seed, json_schema, 4xx errors, /v1/models and /tokenize, tools). Prints a diff and exits
# 1 on any difference. Needs the SmolLM2 and Qwen2.5-Coder models of scripts/pull_model.py; ~3 minutes on 2 cores.
# Usage: bench/response_identity.sh --before /path/to/old/tempered --after build/tempered [--record] [--kinds a,b]
# (--record writes bench/results/response-identity-<UTC date>.md; see bench/response_identity.py).
set -euo pipefail
exec python3 "$(dirname "$0")/response_identity.py" "$@"
