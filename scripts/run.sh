#!/usr/bin/env bash
# Fresh machine -> a running model: install what is missing, build, fetch the default model, run it.
# Extra arguments go to `tempered run` (default: a chat question).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh release
python3 scripts/pull_model.py smollm2-135m-instruct
if (($#)); then
  exec build/tempered run --model smollm2-135m-instruct "$@"
fi
exec build/tempered run --model smollm2-135m-instruct --chat "What is the capital of France?"
