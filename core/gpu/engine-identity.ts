// What the engines call each of the budget's GPUs, for the launch that the plan placed there.
import type { Budget, GpuBudget } from './compute-budget.js';
import type { ComputeBackend, EngineIdentity, EngineIdentityOf } from '../contracts/gpu-identity.js';

/** llama.cpp's device name prefix per backend, as `--list-devices` prints it. */
const DEVICE_PREFIX: Record<ComputeBackend, string> = { cuda: 'CUDA', hip: 'ROCm', vulkan: 'Vulkan', metal: 'MTL' };

/**
 * The identity of each GPU of `budget()` by its index (the plan's "GPU 1"), read when asked:
 * the budget's numbering holds while its cards do. Undefined for an index the budget has not.
 */
export function engineIdentities(budget: () => Budget): EngineIdentityOf {
  return (index) => {
    const gpu = budget().perGpu.find((g) => g.index === index);
    if (gpu === undefined) return undefined;
    const identity: EngineIdentity = { driverIndex: gpu.driverIndex ?? {} };
    if (gpu.engineDevice !== undefined) identity.engineDevice = gpu.engineDevice;
    return identity;
  };
}

/**
 * The card's name in the engine, for people ("CUDA0"): llama-server's own, else the driver's
 * number in the first backend that numbers it, written as llama.cpp writes it. Undefined when neither is known.
 */
export function engineDeviceName(gpu: Pick<GpuBudget, 'engineDevice' | 'driverIndex'>): string | undefined {
  if (gpu.engineDevice !== undefined) return gpu.engineDevice;
  const known = (Object.keys(DEVICE_PREFIX) as ComputeBackend[]).find((b) => gpu.driverIndex?.[b] !== undefined);
  return known === undefined ? undefined : `${DEVICE_PREFIX[known]}${gpu.driverIndex?.[known] ?? 0}`;
}
