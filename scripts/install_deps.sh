#!/usr/bin/env bash
# Installs the Debian packages tempered needs, only those that are missing.
#   scripts/install_deps.sh serve   what building and serving need (scripts/run.sh)
#   scripts/install_deps.sh test    that and what the tests need (scripts/test.sh; the default)
# The serving set keeps libjs-marked and node-dompurify: the binary embeds them (cmake/webui_embed.cmake).
set -euo pipefail
set_name=${1:-test}
serve_packages=(
  build-essential cmake ninja-build ccache pkg-config python3
  nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libjemalloc-dev libjs-marked node-dompurify
)
# GoogleTest for the unit tests, a venv for pytest, clang (the ASan/UBSan build) and its fuzzing runtime (fuzz/run.sh),
# clang-format-14 for the format check, Prometheus and Chromium for their end-to-end tests.
test_packages=(
  python3-venv python3-pip unzip libgtest-dev libgmock-dev libbenchmark-dev
  clang clang-format-14 libclang-rt-14-dev prometheus chromium chromium-driver
)
case "$set_name" in
  serve) packages=("${serve_packages[@]}") ;;
  test) packages=("${serve_packages[@]}" "${test_packages[@]}") ;;
  *) echo "install_deps.sh: unknown set '$set_name' (serve|test)" >&2; exit 1 ;;
esac
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
