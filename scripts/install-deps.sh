#!/usr/bin/env bash
# Installs the Debian packages memfold needs, and only those that are missing.
set -euo pipefail
# One package per line, so others can append.
packages=(
  cmake
  ninja-build
  g++
  pkg-config
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  nlohmann-json3-dev
  libcli11-dev
  libflatbuffers-dev
  libopenblas-dev
  libssl-dev
  libonnx-dev         # ONNX's protobuf message classes (the ONNX reader)
  libprotobuf-dev     # protobuf, which parses them
  clang               # the libFuzzer build (make fuzz)
  libclang-rt-14-dev  # libFuzzer, ASan and UBSan runtimes for clang
  chromium            # renders the HTML report in a test (headless screenshot)
  clang-format        # make format, and CI's format check
  make                # builds the trees memfold compile writes
  gcc-arm-none-eabi   # memfold compile: the Cortex-M cross compiler
  libnewlib-arm-none-eabi          # its C library (memcpy, expf; no heap used)
  libstdc++-arm-none-eabi-newlib   # its C++ headers (the kernels are C++)
  qemu-system-arm     # runs compiled models on an emulated MPS2 AN386 (Cortex-M4)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "memfold: installing missing Debian packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
