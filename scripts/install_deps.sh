#!/usr/bin/env bash
# Installs the Debian packages tempered builds and tests with, only those that are missing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config python3 python3-venv python3-pip unzip
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcpp-httplib-dev clang clang-format-14 libclang-rt-14-dev prometheus
  libjs-marked node-dompurify chromium chromium-driver
)
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
