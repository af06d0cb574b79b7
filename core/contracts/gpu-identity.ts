// How an engine addresses one GPU: the driver's own numbers, never a position in lspci's list.
//
// Why per backend: each backend numbers only its own devices. CUDA counts NVIDIA cards (in PCI
// order with CUDA_DEVICE_ORDER=PCI_BUS_ID, which every GPU launch and the device listing set),
// HIP counts AMD cards, Vulkan counts what its loader enumerates, Metal the Mac's one GPU. An
// integrated GPU or a BMC's display chip is in none of those counts, so it must not shift them.

/** The backends whose driver numbers devices for the engines' visibility variables and flags. */
export type ComputeBackend = 'cuda' | 'hip' | 'vulkan' | 'metal';

/** A device's number in each backend that sees it: CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, GGML_VK_VISIBLE_DEVICES take these. */
export type DriverIndex = Partial<Record<ComputeBackend, number>>;

/** What a launch needs to tell the engine which card a plan's GPU is. */
export interface EngineIdentity {
  driverIndex: DriverIndex;
  /** llama.cpp's device name ('CUDA0', 'ROCm1', 'Vulkan0', 'MTL0'), what `--device` takes; absent when the engine's device list did not name it. */
  engineDevice?: string;
}

/** The identity of the plan's GPU `index` (GpuBudget.index), or undefined when the budget has no such GPU. */
export type EngineIdentityOf = (index: number) => EngineIdentity | undefined;
