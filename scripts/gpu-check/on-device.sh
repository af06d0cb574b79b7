#!/usr/bin/env bash
# `npm run gpu-check` on a lent GPU machine (one NVIDIA H100, 16 cores, no network, no Node, no
# npm; nvcc, CMake and ninja installed), in one call, from what pack-for-device.sh put in
# .gpu-pack/ here:
#
#   bash scripts/gpu-check/pack-for-device.sh          # here, once per change of the sources
#   device run: command "bash scripts/gpu-check/on-device.sh", carry [".gpu-pack"], timeout_s 600
#
# There, in order, each step timed and skipped when a previous call on the same warm machine
# did it (.gpu-device/ is git-ignored, so it stays there between calls):
#   1. the machine: GPU, driver, cores, nvcc;
#   2. Node, dist (built here: no npm or TypeScript there; refused when the tree's sources are
#      not the ones it was built from) and the runtime node_modules, unpacked;
#   3. llama.cpp built with CUDA for the H100 (sm_90) from the source node-llama-cpp ships:
#      llama-server and llama-quantize for the race, and the CUDA backend (a loadable ggml
#      module) that the embedded engine's prebuilt binaries load in place of their own, which
#      could not travel; the longest step (minutes on 16 cores);
#   4. whether node-llama-cpp starts on CUDA with it (printed; the run goes on either way);
#   5. gpu-check: the memory checks, then the speed phase: the race (LLMTRAY_RACE_ROUNDS,
#      default 3) and the returning conversation (LLMTRAY_RETURN_ROUNDS and
#      LLMTRAY_RETURN_REAL_ROUNDS, default 2 and 1), under a timeout that ends it before the
#      call's limit; gpu-check is told that end (LLMTRAY_GPU_CHECK_ENDS_AT), and starts no
#      returning conversation that by its estimate would end less than 20 s before it.
# Where the time went is printed at the end. $OUT gets gpu-check.log, the build's log when it
# failed, and the runs' configs and daemon logs (gpu-check-runs.tar.gz).
#
#   on-device.sh            all of it; arguments after -- go to gpu-check (e.g. -- --only speed)
#   on-device.sh build      steps 1-4 only: a first call that runs out of time leaves the
#                           build for a second call on the same warm machine
# LLMTRAY_DEVICE_BUDGET_S (default 540): the seconds this script plans to finish within.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
pack="$root/.gpu-pack"
dev="$root/.gpu-device"
out="${OUT:-$dev/out}"
budget="${LLMTRAY_DEVICE_BUDGET_S:-540}"
mkdir -p "$dev" "$out"

step=all
if [[ "${1:-}" == build ]]; then step=build; shift; fi
if [[ "${1:-}" == -- ]]; then shift; fi
gpu_check_args=("$@")

t0=$SECONDS
last=$SECONDS
times=()
say() { printf '[on-device %3d s] %s\n' $((SECONDS - t0)) "$*"; }
mark() { times+=("$(printf '%-44s %4d s' "$1" $((SECONDS - last)))"); last=$SECONDS; }
left() { echo $((budget - (SECONDS - t0))); }
summary() {
  echo
  say "where the time went:"
  for t in "${times[@]}"; do echo "  $t"; done
  echo "  total: $((SECONDS - t0)) s of a ${budget} s budget"
}
trap summary EXIT
fail() {
  say "FAILED: $*"
  exit 2
}
# xz where the image has it, else Python's lzma (python3 is there: it holds PyTorch).
unxz_to_stdout() {
  if command -v xz >/dev/null; then xz -dc "$1"; else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"; fi
}
# Unpacks pack file $1 into $2 once per pack: a marker holds the checksum of what was unpacked.
unpack_once() {
  local file="$pack/$1" dest="$2" marker="$dev/unpacked-$1" sum
  sum="$(cksum <"$file")"
  if [[ -f "$marker" && "$(cat "$marker")" == "$sum" ]]; then return 0; fi
  mkdir -p "$dest"
  unxz_to_stdout "$file" | tar -xf - -C "$dest" || return 1
  echo "$sum" >"$marker"
}

# 1. The machine.
say "the machine"
{
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,pci.bus_id --format=csv,noheader || echo "nvidia-smi failed"
  echo "cores: $(nproc); memory: $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); kernel $(uname -r)"
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -1 || echo none on PATH)"; echo "cmake: $(cmake --version 2>/dev/null | head -1)"; echo "ninja: $(ninja --version 2>/dev/null || echo none)"
} 2>&1 | tee "$out/machine.txt"
mark "1. the machine"

# 2. Node, dist and node_modules.
for f in node.xz node-version dist.tar.xz modules.tar.xz prebuilt.tar.xz llama-src.tar.xz sources.list sources.sha256; do
  [[ -f "$pack/$f" ]] || fail "$pack/$f is missing: run bash scripts/gpu-check/pack-for-device.sh here and carry .gpu-pack"
done
# shellcheck disable=SC2046
sources="$(sha256sum $(cat "$pack/sources.list") 2>/dev/null | sha256sum | cut -d' ' -f1)"
[[ "$sources" == "$(cat "$pack/sources.sha256")" ]] || fail "the pack's dist was built from other sources than this tree's (core, scripts/gpu-check, test/bench): run pack-for-device.sh again"
if [[ ! -x "$dev/node/bin/node" || "$("$dev/node/bin/node" --version 2>/dev/null)" != "$(cat "$pack/node-version")" ]]; then
  mkdir -p "$dev/node/bin"
  unxz_to_stdout "$pack/node.xz" >"$dev/node/bin/node" && chmod +x "$dev/node/bin/node" || fail "could not unpack Node"
fi
export PATH="$dev/node/bin:$PATH"
say "node $(node --version)"
# This is for a lent machine's bare copy of the tree: a checkout's own node_modules (or a
# worktree's link to one) is never replaced by the pack's subset.
if [[ -e node_modules || -L node_modules ]] && [[ ! -f "$dev/unpacked-modules.tar.xz" ]]; then
  fail "node_modules is already here: on-device.sh unpacks its own into a bare copy of the tree (a device call's); run it there"
fi
unpack_once dist.tar.xz "$root" || fail "could not unpack dist"
unpack_once modules.tar.xz "$root" || fail "could not unpack node_modules"
unpack_once prebuilt.tar.xz "$root" || fail "could not unpack node-llama-cpp's prebuilt binaries"
mark "2. Node, dist, node_modules unpacked"

# 3. llama.cpp with CUDA for sm_90.
src="$dev/llama/src"
build="$dev/llama/build"
bins="$root/node_modules/@node-llama-cpp/linux-x64-cuda/bins/linux-x64-cuda"
nvcc_path="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
cuda_home="$(dirname "$(dirname "$nvcc_path")")"
export LD_LIBRARY_PATH="$cuda_home/lib64:$cuda_home/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# cuBLAS: the toolkit's where it has it; else the nvidia-cublas wheel PyTorch brings (a toolkit of
# nvcc alone, as one machine here has, holds no cuBLAS), for the build and for both engines.
cublas_args=()
if ! compgen -G "$cuda_home/lib64/libcublas.so*" >/dev/null && ! compgen -G "$cuda_home/targets/x86_64-linux/lib/libcublas.so*" >/dev/null; then
  wheel_lib="$(python3 -c '
import glob, os, site
for root in site.getsitepackages() + [site.getusersitepackages()]:
    for hit in sorted(glob.glob(os.path.join(root, "nvidia", "**", "libcublas.so.*"), recursive=True)):
        print(os.path.dirname(hit)); raise SystemExit
' 2>/dev/null)"
  [[ -n "$wheel_lib" ]] || fail "no cuBLAS: neither in $cuda_home nor in a Python nvidia-cublas wheel"
  wheel_inc="$(dirname "$wheel_lib")/include"
  [[ -f "$wheel_inc/cublas_v2.h" ]] || fail "cuBLAS's library is in $wheel_lib but no cublas_v2.h in $wheel_inc"
  cublas_args=(-DCUDA_cublas_LIBRARY="$(compgen -G "$wheel_lib/libcublas.so.*" | head -1)" -DCUDA_cublasLt_LIBRARY="$(compgen -G "$wheel_lib/libcublasLt.so.*" | head -1)"
    "-DCMAKE_CUDA_FLAGS=-I$wheel_inc" "-DCMAKE_CXX_FLAGS=-I$wheel_inc")
  export LD_LIBRARY_PATH="$wheel_lib:$LD_LIBRARY_PATH"
  say "cuBLAS from the Python wheel in $wheel_lib"
fi
if [[ -x "$build/bin/llama-server" && -x "$build/bin/llama-quantize" && -f "$build/bin/libggml-cuda.so" ]]; then
  say "llama.cpp: built by an earlier call, kept"
else
  [[ -x "$nvcc_path" ]] || fail "no nvcc (looked on PATH and at $nvcc_path; set CUDACXX)"
  rm -rf "$dev/llama" "$dev/unpacked-llama-src.tar.xz"
  unpack_once llama-src.tar.xz "$src" || fail "could not unpack the llama.cpp source"
  say "building llama.cpp $(cat "$pack/llama-commit" 2>/dev/null) with CUDA for sm_90 on $(nproc) cores (log: .gpu-device/llama-build.log)"
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  # GGML_BACKEND_DL: the backends are loadable modules, as in node-llama-cpp's prebuilt binaries,
  # so the embedded engine can load this libggml-cuda.so; unversioned sonames as node-llama-cpp
  # builds them, so the module's libggml-base.so is the one that engine has already loaded.
  if ! { cmake -S "$src" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
      -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF -DGGML_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc_path" -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DGGML_CUDA_NCCL=OFF -DGGML_CUDA_COMPRESSION_MODE=none -DCMAKE_PLATFORM_NO_VERSIONED_SONAME=ON \
      -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF "${cublas_args[@]}" &&
    cmake --build "$build" --target llama-server llama-quantize ggml-cpu ggml-cuda -j "$(nproc)"; } >"$dev/llama-build.log" 2>&1; then
    tail -c 2000000 "$dev/llama-build.log" >"$out/llama-build.log"
    tail -30 "$dev/llama-build.log"
    fail "the llama.cpp build failed (its log is in \$OUT/llama-build.log)"
  fi
fi
ls -la "$build/bin" | grep -E 'llama-server|llama-quantize|libggml' || true
# The module must ask for the libggml-base.so the embedded engine has already loaded (unversioned
# soname), not load a second copy from the build folder.
say "libggml-cuda.so needs: $(readelf -d "$build/bin/libggml-cuda.so" 2>/dev/null | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
# The embedded engine's CUDA backend: node-llama-cpp's prebuilt libggml-cuda.so stayed behind (pack-for-device.sh).
cp "$build/bin/libggml-cuda.so" "$bins/libggml-cuda.so" || fail "could not put the CUDA backend beside node-llama-cpp's binaries"
mark "3. llama.cpp with CUDA (sm_90)"

# The daemon (systeminformation) lists GPUs from `lspci -vvv` and only then asks nvidia-smi for
# their memory: without lspci it sees no GPU, and gpu-check would exit 3 on an H100. Where the
# image has none, a stand-in prints the display-class devices from /sys in lspci's layout
# (addresses, class, vendor; no names: nvidia-smi's name is the one the daemon shows).
if ! command -v lspci >/dev/null; then
  mkdir -p "$dev/bin"
  cat >"$dev/bin/lspci" <<'SH'
#!/bin/sh
# Written by scripts/gpu-check/on-device.sh: a stand-in for lspci -vvv from /sys, display-class devices only.
[ "$*" = "-vvv" ] || { echo "lspci stand-in (on-device.sh): only -vvv" >&2; exit 2; }
for d in /sys/bus/pci/devices/*; do
  class=$(cat "$d/class" 2>/dev/null) || continue
  case "$class" in 0x0300*) kind="VGA compatible controller" ;; 0x0302*) kind="3D controller" ;; 0x03*) kind="Display controller" ;; *) continue ;; esac
  vendor=$(cat "$d/vendor"); device=$(cat "$d/device"); addr=$(basename "$d"); addr=${addr#0000:}
  case "$vendor" in 0x10de) name="NVIDIA Corporation" ;; 0x1002) name="Advanced Micro Devices, Inc. [AMD/ATI]" ;; 0x8086) name="Intel Corporation" ;; *) name="Vendor ${vendor#0x}" ;; esac
  printf '%s %s: %s Device %s\n' "$addr" "$kind" "$name" "${device#0x}"
  [ -e "$d/driver" ] && printf '\tKernel driver in use: %s\n' "$(basename "$(readlink "$d/driver")")"
  printf '\n'
done
SH
  chmod +x "$dev/bin/lspci"
  export PATH="$dev/bin:$PATH"
  say "no lspci on this machine: a stand-in from /sys says:"
  lspci -vvv | sed 's/^/  /'
fi

# 4. Does node-llama-cpp start on CUDA with it? Printed; gpu-check's checks and offload lines say the rest.
say "node-llama-cpp on CUDA?"
timeout 180 node --input-type=module -e "
  import { getLlama } from 'node-llama-cpp';
  const llama = await getLlama({ gpu: 'cuda', build: 'never', logLevel: 'warn' });
  const vram = await llama.getVramState();
  console.log('node-llama-cpp: gpu ' + llama.gpu + ', devices ' + JSON.stringify(await llama.getGpuDeviceNames()) + ', VRAM ' + (vram.total / 2 ** 30).toFixed(1) + ' GiB');
  await llama.dispose();
" 2>&1 | tail -20 | tee "$out/node-llama-cpp.txt"
mark "4. node-llama-cpp on CUDA, probed"
if [[ "$step" == build ]]; then
  say "built; call again without 'build' on the same warm machine to run gpu-check"
  exit 0
fi

# 5. gpu-check: the memory checks, then the race and the returning conversation.
remaining="$(left)"
if ((remaining < 120)); then
  say "only ${remaining} s of the ${budget} s budget left: not starting gpu-check; call again on the same warm machine (what is built is kept)"
  exit 4
fi
runs="$dev/runs/$(date +%Y%m%d-%H%M%S)"
within=$((remaining - 15))
say "npm run gpu-check ${gpu_check_args[*]} (as node dist/scripts/gpu-check/gpu-check.js: no npm here), at most ${within} s; work dir $runs"
LLMTRAY_LLAMA_SERVER="$build/bin/llama-server" LLMTRAY_LLAMA_QUANTIZE="$build/bin/llama-quantize" \
  LLMTRAY_BENCH_MODELS="$dev/bench-models" LLMTRAY_RACE_ROUNDS="${LLMTRAY_RACE_ROUNDS:-3}" \
  LLMTRAY_GPU_CHECK_ENDS_AT="$(($(date +%s) + within))" \
  timeout --kill-after=10 "$within" node dist/scripts/gpu-check/gpu-check.js --work-dir "$runs" "${gpu_check_args[@]}" 2>&1 | tee "$out/gpu-check.log"
code="${PIPESTATUS[0]}"
mark "5. gpu-check (memory checks, race, return)"
((code == 124 || code == 137)) && say "gpu-check ran out of the budget and was stopped: what it printed above stands, nothing after it is claimed"
# The configs and daemon logs, without the models.
tar -czf "$out/gpu-check-runs.tar.gz" -C "$dev" --exclude='*.gguf' "runs/$(basename "$runs")" 2>/dev/null || true
say "gpu-check exited $code (0 pass, 1 an estimate off, 2 incomplete, 3 no GPU, 124 stopped at the budget)"
exit "$code"
