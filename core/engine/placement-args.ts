// Where a launch goes, said to the engine: the placement `place` decided (core/policy/place.ts)
// as llama-server's flags, or as the environment the embedded engine's llama.cpp reads.
//
// Why explicit flags and never llama.cpp's own fitting: the scheduler already decided what
// goes on which GPU for the whole set of models; llama.cpp's defaults (split every model over
// every GPU in proportion to free memory) would put this model on memory the plan gave another.
//
// Device numbers are the driver's, never the plan's: the plan's "GPU 1" is the second card the
// budget counts, while CUDA counts NVIDIA cards only, HIP AMD cards only, Vulkan its loader's
// devices. Each GPU's identity (core/contracts/gpu-identity.ts, from the budget: llama-server's
// own device names and the vendor tools' PCI order) says what each backend calls it. CUDA numbers
// devices fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so every launch on a GPU sets it, as
// the device listing does: the numbers it gave are then the ones the engine uses.
import type { EngineCapabilities } from './llama-server/capabilities.js';
import type { Placement } from '../contracts/plan.js';
import type { ComputeBackend, EngineIdentity, EngineIdentityOf } from '../contracts/gpu-identity.js';
import type { EngineKind } from '../contracts/snapshot.js';

/** Backends llama-server may number devices in, in the order its device registry lists them. */
const LLAMA_SERVER_BACKENDS: readonly ComputeBackend[] = ['cuda', 'hip', 'vulkan', 'metal'];

/** The embedded engine's per-backend visibility variables. */
const VISIBILITY: readonly [ComputeBackend, string][] = [
  ['cuda', 'CUDA_VISIBLE_DEVICES'],
  ['hip', 'HIP_VISIBLE_DEVICES'],
  ['vulkan', 'GGML_VK_VISIBLE_DEVICES'],
];

/** Without identities (a caller that has no budget), a plan's index stands for every backend's number. */
const PLAN_INDEX: EngineIdentityOf = (index) => ({ driverIndex: { cuda: index, hip: index, vulkan: index } });

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
 * llama-server's flags for a placement. When llama-server's device list named every device the
 * placement uses and the build has `--device`: `--device CUDA0[,CUDA2…]`, and the positions below
 * count within that list. Otherwise the positions are the driver's numbers in the first backend
 * every device has one in. One device: `--split-mode none --main-gpu I` (the whole model there).
 * A split: `--split-mode layer --tensor-split` with each device's layers at its position (0 for
 * devices it does not use) and `--main-gpu` for the one holding the output tensors. A mixture of
 * experts with experts on the CPU: `--n-cpu-moe N`. Flags the build lacks are left out (an old
 * build without `--n-cpu-moe` cannot do that placement; `place` is told). Pure.
 */
export function placementArgs(placement: Placement | undefined, capabilities: EngineCapabilities, identityOf: EngineIdentityOf = PLAN_INDEX): string[] {
  if (placement === undefined || placement.kind === 'cpu' || placement.devices.length === 0) return [];
  const has = (...names: string[]): string | undefined => names.find((name) => capabilities.flags.has(name));
  const splitMode = has('--split-mode', '-sm');
  const mainGpu = has('--main-gpu', '-mg');
  const tensorSplit = has('--tensor-split', '-ts');
  const deviceFlag = has('--device', '-dev');
  const identities = placement.devices.map((d) => identityOf(d.index));
  const names = identities.map((id) => id?.engineDevice);
  const args: string[] = [];
  let position: (at: number) => number;
  if (deviceFlag !== undefined && names.every((name) => name !== undefined)) {
    // In the plan's index order, as a split's layers go: the output ends on the last one.
    const order = placement.devices.map((_, at) => at).sort((a, b) => (placement.devices[a]?.index ?? 0) - (placement.devices[b]?.index ?? 0));
    args.push(deviceFlag, order.map((at) => names[at]).join(','));
    position = (at) => order.indexOf(at);
  } else {
    const backend = LLAMA_SERVER_BACKENDS.find((b) => identities.every((id) => id?.driverIndex[b] !== undefined));
    position = (at) => (backend === undefined ? (placement.devices[at]?.index ?? 0) : (identities[at]?.driverIndex[backend] ?? 0));
  }
  const main = position(0);
  if (placement.devices.length === 1) {
    if (splitMode !== undefined) args.push(splitMode, 'none');
    if (mainGpu !== undefined) args.push(mainGpu, String(main));
  } else {
    const positions = placement.devices.map((_, at) => position(at));
    const shares = Array.from({ length: Math.max(...positions) + 1 }, (_, p) => placement.devices[positions.indexOf(p)]?.layers ?? 0);
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
 * order, as the driver tools and the device listing do. The embedded engine (node-llama-cpp has
 * no split options) is limited to the placement's devices through each backend's visibility
 * variable, in that backend's numbers; a backend that does not number every one of them is not
 * told (its variable would name another card). It is never given a split: node-llama-cpp 3.21
 * takes no tensorSplit, so llama.cpp would share the layers by free memory, not by the plan;
 * its models are planned on one GPU at most (`oneGpu`, core/demand/desired-state.ts). Pure.
 */
export function placementEnv(placement: Placement | undefined, engine: EngineKind, identityOf: EngineIdentityOf = PLAN_INDEX): Record<string, string> {
  if (placement === undefined || placement.kind === 'cpu' || placement.devices.length === 0) return {};
  const env: Record<string, string> = { CUDA_DEVICE_ORDER: 'PCI_BUS_ID' };
  if (engine === 'embedded') {
    const identities: (EngineIdentity | undefined)[] = placement.devices.map((d) => identityOf(d.index));
    for (const [backend, variable] of VISIBILITY) {
      const numbers = identities.map((id) => id?.driverIndex[backend]);
      if (!numbers.every((n): n is number => n !== undefined)) continue;
      // In driver order, as llama-server's --tensor-split: the last visible device then takes the
      // output layer, which is where `place` costed it.
      env[variable] = numbers.sort((a, b) => a - b).join(',');
    }
  }
  return env;
}
