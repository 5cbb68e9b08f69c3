#!/usr/bin/env bash
# Configures and builds tempered. Usage: scripts/build.sh [release|asan]   (default: release)
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
# Relative paths in ccache's hashes: a fresh clone elsewhere (CI) still hits the cache.
export CCACHE_BASEDIR="$PWD"
case "$flavour" in
  release) cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && ninja -C build ;;
  asan) cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEMPERED_SANITIZE=ON >/dev/null \
          && ninja -C build-asan ;;
  *) echo "build.sh: unknown flavour '$flavour' (release|asan)" >&2; exit 1 ;;
esac
