#!/usr/bin/env bash
# Configures and builds tempered. Usage: scripts/build.sh [release|asan]   (default: release)
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
# Relative paths in ccache's hashes: a fresh clone elsewhere (CI) still hits the cache. The ASan build's -g1
# would otherwise put the build directory's absolute path into every hash (ccache's hash_dir), so a clone
# at a new path recompiled all of it; the cost is a debug-info working directory that may name another clone.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
case "$flavour" in
  release) cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && ninja -C build ;;
  # -O1 -g1 (line tables only): sanitizer builds compile much faster and still report file:line.
  asan) cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
          -DTEMPERED_SANITIZE=ON >/dev/null \
          && ninja -C build-asan ;;
  *) echo "build.sh: unknown flavour '$flavour' (release|asan)" >&2; exit 1 ;;
esac
