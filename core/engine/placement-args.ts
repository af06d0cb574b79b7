// Where a launch goes, said to the engine: the placement `place` decided (core/policy/place.ts)
// as llama-server's flags, or as the environment the embedded engine's llama.cpp reads.
//
// Why explicit flags and never llama.cpp's own fitting: the scheduler already decided what
// goes on which GPU for the whole set of models; llama.cpp's defaults (split every model over
// every GPU in proportion to free memory) would put this model on memory the plan gave another.
//
// Device numbers are the driver's (nvidia-smi's, PCI bus order). CUDA numbers devices fastest
// first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so every launch on a GPU sets it: without it,
// "GPU 1" in the plan could be another card for the engine.
import type { Placement } from '../policy/place.js';
import type { EngineCapabilities } from './llama-server/capabilities.js';

/**
 * The blocks a placement puts on the device where that differs from the level's: part on the
 * CPU says how many the device holds, CPU only says none. Undefined: the level decides (a model
 * on one GPU or split over several holds every layer the level offloads).
 */
export function placementGpuLayers(placement: Placement | undefined): number | undefined {
  if (placement === undefined) return undefined;
  if (placement.kind === 'cpu') return 0;
  if (placement.kind === 'partial' && placement.cpuMoeLayers === 0) return placement.devices.reduce((sum, d) => sum + d.layers, 0);
  return undefined;
}

/**
 * llama-server's flags for a placement. One device: `--split-mode none --main-gpu I` (the
 * whole model there). A split: `--split-mode layer --tensor-split` with each device's layers at
 * its position (0 for devices it does not use) and `--main-gpu` for the one holding the output
 * tensors. A mixture of experts with experts on the CPU: `--n-cpu-moe N`. Flags the build lacks
 * are left out (an old build without `--n-cpu-moe` cannot do that placement; `place` is told).
 * Pure.
 */
export function placementArgs(placement: Placement | undefined, capabilities: EngineCapabilities): string[] {
  if (placement === undefined || placement.kind === 'cpu' || placement.devices.length === 0) return [];
  const has = (...names: string[]): string | undefined => names.find((name) => capabilities.flags.has(name));
  const splitMode = has('--split-mode', '-sm');
  const mainGpu = has('--main-gpu', '-mg');
  const tensorSplit = has('--tensor-split', '-ts');
  const main = placement.devices[0]?.index ?? 0;
  const args: string[] = [];
  if (placement.devices.length === 1) {
    if (splitMode !== undefined) args.push(splitMode, 'none');
    if (mainGpu !== undefined) args.push(mainGpu, String(main));
  } else {
    const width = Math.max(...placement.devices.map((d) => d.index)) + 1;
    const shares = Array.from({ length: width }, (_, i) => placement.devices.find((d) => d.index === i)?.layers ?? 0);
    if (splitMode !== undefined) args.push(splitMode, 'layer');
    if (tensorSplit !== undefined) args.push(tensorSplit, shares.join(','));
    if (mainGpu !== undefined) args.push(mainGpu, String(main));
  }
  const cpuMoe = has('--n-cpu-moe', '-ncmoe');
  if (placement.cpuMoeLayers > 0 && cpuMoe !== undefined) args.push(cpuMoe, String(placement.cpuMoeLayers));
  return args;
}

/**
 * The environment for a launch's placement. Every GPU launch numbers CUDA devices in PCI bus
 * order, as the driver tools do. The embedded engine (node-llama-cpp has no split options) is
 * limited to the placement's devices through each backend's visibility variable: llama.cpp then
 * splits layers over the visible devices in proportion to their free memory, which is how
 * `place` shares a split too. Pure.
 */
export function placementEnv(placement: Placement | undefined, engine: 'embedded' | 'llama-server'): Record<string, string> {
  if (placement === undefined || placement.kind === 'cpu' || placement.devices.length === 0) return {};
  const env: Record<string, string> = { CUDA_DEVICE_ORDER: 'PCI_BUS_ID' };
  if (engine === 'embedded') {
    // In index order, as llama-server's --tensor-split: the last visible device then takes the
    // output layer, which is where `place` costed it.
    const visible = placement.devices.map((d) => d.index).sort((a, b) => a - b).join(',');
    env.CUDA_VISIBLE_DEVICES = visible;
    env.HIP_VISIBLE_DEVICES = visible;
    env.GGML_VK_VISIBLE_DEVICES = visible;
  }
  return env;
}
