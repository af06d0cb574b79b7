#!/usr/bin/env bash
# Packs, on a machine with the checkout installed (npm ci), what `npm run gpu-check` needs on a
# lent GPU machine that reaches nothing and has no Node: .gpu-pack/ (git-ignored), which the
# device call carries and scripts/gpu-check/on-device.sh unpacks there. What it holds and why:
#
#   node.xz           this Node (the device image has none), its symbols and debug sections
#                     stripped (16 MB; addons link against its dynamic symbols, which stay):
#                     about half of the call's 64 MiB
#   dist.tar.xz       `npm run build:core` made here: the device has no npm and no TypeScript,
#                     and compiled JavaScript is the same on any machine; sources.sha256 lets the
#                     device refuse a dist older than the tree it arrives with
#   modules.tar.xz    the runtime node_modules (runtime-closure.mjs), less types, maps and docs
#                     and less node-llama-cpp's 35 MB llama.cpp bundle
#   prebuilt.tar.xz   node-llama-cpp's prebuilt binaries for linux-x64 (CPU) and linux-x64-cuda,
#                     the latter WITHOUT libggml-cuda.so: its 128 MB of already-compressed GPU
#                     code cannot travel, and it holds no sm_90 machine code (only PTX the
#                     driver would have to compile); on-device.sh builds one for the H100
#   llama-src.tar.xz  the llama.cpp source node-llama-cpp ships (the very commit of its
#                     binaries), less models, docs and other backends: on-device.sh builds
#                     llama-server, llama-quantize and the CUDA backend from it with nvcc
#
# Prints each part's size and the total with the tracked tree, and fails past 60 MiB (the
# call's limit is 64 MiB). LLMTRAY_PACK_XZ_LEVEL (default 9) only for trying the script quickly.
#
#   bash scripts/gpu-check/pack-for-device.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
pack="$root/.gpu-pack"
level="${LLMTRAY_PACK_XZ_LEVEL:-9}"
xzc() { nice -n 19 xz "-$level" -T1 -c; }
say() { echo "pack-for-device: $*" >&2; }

git check-ignore -q .gpu-pack/ || { say ".gpu-pack/ is not git-ignored: the device call would send it twice"; exit 1; }
[[ -d node_modules/node-llama-cpp ]] || { say "node_modules is missing: run npm ci first"; exit 1; }
node_bin="$(command -v node)"
node_version="$(node --version)"
[[ "$node_version" == v22.* || "$node_version" == v2[4-9].* ]] || { say "node $node_version: the daemon wants ^22.17 or >=24"; exit 1; }
[[ "$(uname -m)" == x86_64 ]] || { say "this is $(uname -m); the device is x86-64, and its Node and binaries must be too"; exit 1; }

rm -rf "$pack"
mkdir -p "$pack"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

say "node $node_version from $node_bin, stripped"
strip --strip-all -o "$tmp/node" "$node_bin"
[[ "$("$tmp/node" --version)" == "$node_version" ]] || { say "the stripped node does not run"; exit 1; }
xzc <"$tmp/node" >"$pack/node.xz"
echo "$node_version" >"$pack/node-version"

say "building dist (npm run build:core)"
nice -n 19 npm run -s build:core >&2
# The sources dist was built from, to be checked on the device against the tree it arrives with.
git ls-files core scripts/gpu-check test/bench test/soak tsconfig.base.json tsconfig.build.json | LC_ALL=C sort >"$pack/sources.list"
# shellcheck disable=SC2046
sha256sum $(cat "$pack/sources.list") | sha256sum | cut -d' ' -f1 >"$pack/sources.sha256"
tar -cf - dist/core dist/scripts dist/test | xzc >"$pack/dist.tar.xz"

say "runtime node_modules"
node scripts/gpu-check/runtime-closure.mjs >"$pack/modules.list"
# shellcheck disable=SC2046
tar -cf - --exclude='*.d.ts' --exclude='*.d.cts' --exclude='*.d.mts' --exclude='*.map' --exclude='*.md' --exclude='gitRelease.bundle' \
  $(cat "$pack/modules.list") | xzc >"$pack/modules.tar.xz"

say "node-llama-cpp's prebuilt binaries (linux-x64, linux-x64-cuda without libggml-cuda.so)"
for p in linux-x64 linux-x64-cuda; do
  [[ -d "node_modules/@node-llama-cpp/$p" ]] || { say "node_modules/@node-llama-cpp/$p is missing: run npm ci on linux x64"; exit 1; }
done
tar -cf - --exclude='libggml-cuda.so' node_modules/@node-llama-cpp/linux-x64 node_modules/@node-llama-cpp/linux-x64-cuda | xzc >"$pack/prebuilt.tar.xz"

say "llama.cpp source from node_modules/node-llama-cpp/llama/gitRelease.bundle"
git clone -q node_modules/node-llama-cpp/llama/gitRelease.bundle "$tmp/src" 2>/dev/null
git -C "$tmp/src" rev-parse --short HEAD >"$pack/llama-commit"
cp node_modules/node-llama-cpp/llama/binariesGithubRelease.json "$pack/llama-release.json"
# Every backend's source but CUDA's and the CPU's is left out: ggml adds a backend's folder only when it is switched on.
git -C "$tmp/src" archive --format=tar HEAD -- CMakeLists.txt cmake common ggml include src vendor tools licenses LICENSE \
  ':!ggml/src/ggml-vulkan' ':!ggml/src/ggml-sycl' ':!ggml/src/ggml-opencl' ':!ggml/src/ggml-metal' ':!ggml/src/ggml-hexagon' \
  ':!ggml/src/ggml-et' ':!ggml/src/ggml-cann' ':!ggml/src/ggml-webgpu' ':!ggml/src/ggml-zdnn' ':!ggml/src/ggml-openvino' | xzc >"$pack/llama-src.tar.xz"

tree_bytes="$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)"
pack_bytes="$(du -cb "$pack"/* | tail -1 | cut -f1)"
for f in "$pack"/*; do awk -v n="$(basename "$f")" -v b="$(stat -c %s "$f")" 'BEGIN { printf "  %-20s %7.1f MiB\n", n, b / 1048576 }' >&2; done
total_mib="$(( (tree_bytes + pack_bytes) / 1048576 ))"
say "the pack: $(( pack_bytes / 1048576 )) MiB; with the tracked tree: ${total_mib} MiB of the call's 64"
if (( total_mib > 60 )); then
  say "too big for one device call"
  exit 1
fi
echo "$pack"
