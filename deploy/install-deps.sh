#!/usr/bin/env bash
# Installs the Debian packages WARP builds and tests with. Idempotent: asks
# apt-get for nothing when every package is already present.
#   deploy/install-deps.sh          build and test dependencies
#   deploy/install-deps.sh --bench  also the benchmark tools (fio)
#   deploy/install-deps.sh --fuzz   also clang and libFuzzer (tests/bench/fuzz.sh)
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev
  nlohmann-json3-dev libcli11-dev liburing-dev libcpp-httplib-dev libssl-dev
  libpcre2-dev libutf8proc-dev bible-kjv-text
  python3-torch python3-numpy python3-jinja2 python3-yaml python3-tqdm
  openssl
  chromium
)
# python3-torch and python3-numpy run the PyTorch reference of tests/reference
# (ctest's reference_selftest, /usr/bin/python3). python3-jinja2 renders the
# chat templates as transformers does (tests/chat/reference_render.py, the
# reference of tests/chat). python3-yaml and python3-tqdm are what llama.cpp's
# convert_hf_to_gguf.py and its gguf-py need besides torch and numpy
# (tests/peer/convert_fixture.py runs it on the golden fixtures). openssl
# makes the throwaway CA and certificates of the TLS tests
# (tests/testing/test_certificates.cc).
# chromium is the headless browser (driven by playwright-core, tests/npm) that
# loads computed serve's chat page in tests/serve/chat_page_test.
# Node.js and npm run the reference tokenizers and Jinja renderer of the tests
# (tests/npm); the machine may already have them from outside Debian.
command -v node > /dev/null || packages+=(nodejs)
command -v npm > /dev/null || packages+=(npm)
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(fio) ;;
    # The fuzz build (tests/bench/fuzz.sh): clang and its libFuzzer and sanitizer runtimes.
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
  esac
done

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
