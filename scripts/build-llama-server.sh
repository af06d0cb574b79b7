#!/usr/bin/env bash
# Builds llama.cpp's llama-server (CPU) from the source node-llama-cpp ships: a git bundle of
# the very llama.cpp commit its prebuilt binaries come from. It lets the opt-in real
# llama-server tests run on a machine that reaches nothing but the npm registry. Prints the
# binary's path on stdout (the build's own output goes to stderr); a second run reuses it.
# llama-quantize is built beside it: the benchmarks make their K-quant models with it
# (test/bench/real-shape/); a checkout built before that gets it on its next run.
#
#   LLMTRAY_LLAMA_SERVER=$(bash scripts/build-llama-server.sh) npm test
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.llama-server"
bin="$out/build/bin/llama-server"
if [[ -x "$bin" ]]; then
  if [[ ! -x "$out/build/bin/llama-quantize" ]]; then
    cmake --build "$out/build" --target llama-quantize -j "$(nproc)" >&2
  fi
  echo "$bin"
  exit 0
fi
bundle="$root/node_modules/node-llama-cpp/llama/gitRelease.bundle"
if [[ ! -f "$bundle" ]]; then
  echo "build-llama-server: no llama.cpp source at $bundle; run npm ci first" >&2
  exit 1
fi
command -v cmake >/dev/null || { echo "build-llama-server: cmake is missing (apt-get install cmake)" >&2; exit 1; }
rm -rf "$out"
git clone -q "$bundle" "$out/src" 2>/dev/null
cmake -S "$out/src" -B "$out/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >&2
cmake --build "$out/build" --target llama-server llama-quantize -j "$(nproc)" >&2
echo "$bin"
