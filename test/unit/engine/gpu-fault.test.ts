// Which of the plan's GPUs a fault in an engine's log was on, from the launch's placement.
import { describe, expect, it } from 'vitest';
import { faultyGpu, gpuFaultIn, type GpuFault } from '../../../core/engine/gpu-fault.js';
import type { EngineIdentityOf } from '../../../core/contracts/gpu-identity.js';
import type { Placement } from '../../../core/contracts/plan.js';

// A server whose BMC chip sits between its cards: the plan's GPU 0 is CUDA 0, GPU 1 CUDA 1, GPU 2 CUDA 2.
const identity: EngineIdentityOf = (index) => (index <= 2 ? { driverIndex: { cuda: index }, engineDevice: `CUDA${index}` } : undefined);
const on = (...indices: number[]): Placement => ({ kind: indices.length > 1 ? 'split' : 'gpu', devices: indices.map((index) => ({ index, layers: 4, bytes: 1 })), cpuMoeLayers: 0, hostBytes: 0 });
const fault = (cudaDevice: number | null): GpuFault => ({ line: 'CUDA error: unspecified launch failure', cudaDevice, busAddress: null, cardLost: false });

describe('faultyGpu', () => {
  it("reads llama-server's device number as the driver's: it sees every card", () => {
    expect(faultyGpu(fault(2), on(1, 2), 'llama-server', identity)).toBe(2);
    expect(faultyGpu(fault(1), on(1, 2), 'llama-server', identity)).toBe(1);
  });

  it("reads the embedded engine's as a position among its placement's cards, in driver order: it sees only those", () => {
    expect(faultyGpu(fault(0), on(2), 'embedded', identity)).toBe(2);
  });

  it('takes the one GPU of a placement when the log names no device, and guesses no card of a split or a CPU placement', () => {
    expect(faultyGpu(fault(null), on(1), 'llama-server', identity)).toBe(1);
    expect(faultyGpu(fault(null), on(0, 1), 'llama-server', identity)).toBeNull();
    expect(faultyGpu(fault(5), on(0, 1), 'llama-server', identity)).toBeNull();
    expect(faultyGpu(fault(0), { kind: 'cpu', devices: [], cpuMoeLayers: 0, hostBytes: 10 }, 'llama-server', identity)).toBeNull();
    expect(faultyGpu(fault(0), undefined, 'llama-server', identity)).toBeNull();
  });

  it('finds the device on the line after the error, and the card in the kernel’s words', () => {
    expect(gpuFaultIn(['CUDA error: an illegal memory access was encountered', '  current device: 3, in function ggml_backend_cuda_synchronize at ggml-cuda.cu:2461'])?.cudaDevice).toBe(3);
    expect(gpuFaultIn(['NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.'])).toMatchObject({ busAddress: '0000:44:00.0', cardLost: true });
    expect(gpuFaultIn(['srv  update_slots: all slots are idle'])).toBeNull();
    // Without today's llama-server prefix: the reason a person reads is the line's words.
    expect(gpuFaultIn(['0.04.120.000 E CUDA error: an illegal memory access was encountered'])?.line).toBe('CUDA error: an illegal memory access was encountered');
  });
});
