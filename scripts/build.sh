#!/usr/bin/env bash
# Configures and builds tempered.
#   scripts/build.sh release [target...]   build/, optimised: the named targets, or every one (default)
#   scripts/build.sh asan [target...]      build-asan/, with AddressSanitizer and UBSan
#   scripts/build.sh serve                 build/, the `tempered` binary alone (scripts/run.sh): configures
#                                          without GoogleTest when it is not installed
# release and asan require GoogleTest (scripts/install_deps.sh test).
# A cold build (CI's fresh clone) is mostly compiling: TEMPERED_UNITY_BATCH (default 8; 0 turns it off)
# compiles the src/ and tools/ libraries 8 sources to a translation unit (cmake/unity.cmake), in about half
# their CPU time (bench/results/ci-time-2026-12-03.md), at the cost of coarser rebuilds; a build directory
# of your own configured without it compiles each file alone.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
(($#)) && shift
targets=("$@")
# Relative paths in ccache's hashes: a fresh clone elsewhere (CI) still hits the cache. The ASan build's -g1
# would otherwise put the build directory's absolute path into every hash (ccache's hash_dir), so a clone
# at a new path recompiled all of it; the cost is a debug-info working directory that may name another clone.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
batching=(-DTEMPERED_UNITY_BATCH="${TEMPERED_UNITY_BATCH:-8}")
case "$flavour" in
  release) dir=build; options=(-DCMAKE_BUILD_TYPE=Release -DTEMPERED_REQUIRE_GTEST=ON) ;;
  serve) dir=build; options=(-DCMAKE_BUILD_TYPE=Release -DTEMPERED_REQUIRE_GTEST=OFF); targets=(tempered) ;;
  # -O1 -g1 (line tables only): sanitizer builds compile much faster and still report file:line. clang, not
  # GCC: it compiles this build in about 70 % of GCC's CPU time (bench/results/ci-time-2026-12-07.md), and the
  # release build keeps GCC, so both compilers' warnings hold on every landing.
  asan) dir=build-asan; options=(-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug
                                 -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DTEMPERED_SANITIZE=ON -DTEMPERED_REQUIRE_GTEST=ON) ;;
  *) echo "build.sh: unknown flavour '$flavour' (release|asan|serve)" >&2; exit 1 ;;
esac
cmake -S . -B "$dir" -G Ninja "${options[@]}" "${batching[@]}" >/dev/null
ninja -C "$dir" "${targets[@]}"
