#!/usr/bin/env bash
# Fresh machine -> a served model: install what serving needs (no test tools), build the `tempered` binary
# alone, fetch the default model, serve it on http://127.0.0.1:8000 (OpenAI-compatible). Extra arguments go
# to `tempered serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh serve
scripts/build.sh serve
python3 scripts/pull_model.py smollm2-135m-instruct
exec build/tempered serve --model smollm2-135m-instruct "$@"
