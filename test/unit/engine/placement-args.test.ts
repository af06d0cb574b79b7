// Where `place` put a model, said to the engines: checked against the flags a real llama-server
// build lists in its --help (the fixtures are real output), and the embedded engine's environment.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { argvFor, EMBEDDED_CAPABILITIES, type LaunchSpec } from '../../../core/engine/launch-spec.js';
import { detectCapabilities } from '../../../core/engine/llama-server/capabilities.js';
import { placementArgs, placementEnv, placementGpuLayers } from '../../../core/engine/placement-args.js';
import type { Placement } from '../../../core/contracts/plan.js';
import type { EngineIdentity, EngineIdentityOf } from '../../../core/contracts/gpu-identity.js';

const text = (name: string): string => readFileSync(new URL(`../../fixtures/${name}`, import.meta.url), 'utf8');
const recent = detectCapabilities(text('llama-server-help.txt'), 'version: 0.4.0-dev (build 1, commit 80fb11a)\n');
const old = detectCapabilities(text('llama-server-help-old.txt'), 'version: 4567 (1d1e6a90)\n');

const onGpu1: Placement = { kind: 'gpu', devices: [{ index: 1, layers: 32, bytes: 9e9 }], cpuMoeLayers: 0, hostBytes: 0 };
const split: Placement = { kind: 'split', devices: [{ index: 2, layers: 20, bytes: 1e10 }, { index: 0, layers: 12, bytes: 6e9 }], cpuMoeLayers: 0, hostBytes: 0 };
const partial: Placement = { kind: 'partial', devices: [{ index: 0, layers: 10, bytes: 1.15e10 }], cpuMoeLayers: 0, hostBytes: 1e10 };
const moe: Placement = { kind: 'partial', devices: [{ index: 0, layers: 48, bytes: 1.1e10 }], cpuMoeLayers: 13, hostBytes: 9e9 };
const cpu: Placement = { kind: 'cpu', devices: [], cpuMoeLayers: 0, hostBytes: 5e9 };

const spec: LaunchSpec = { modelId: 'qwen', engine: 'llama-server', modelPath: '/m/qwen.gguf', contextTokens: 8192, gpuLayers: 'all', aliases: [], extraArgs: [], env: {} };
const KEY = { keyFile: '/k' };

function valueOf(argv: string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i < 0 ? undefined : argv[i + 1];
}

describe('placementArgs against a real llama-server --help', () => {
  it('one GPU: the whole model there, no split', () => {
    expect(placementArgs(onGpu1, recent)).toEqual(['--split-mode', 'none', '--main-gpu', '1']);
  });

  it('a layer split: each device its layers at its own position, the main one named', () => {
    expect(placementArgs(split, recent)).toEqual(['--split-mode', 'layer', '--tensor-split', '12,0,20', '--main-gpu', '2']);
  });

  it('a mixture of experts with experts on the CPU: --n-cpu-moe, every layer on the GPU', () => {
    expect(placementArgs(moe, recent)).toEqual(['--split-mode', 'none', '--main-gpu', '0', '--n-cpu-moe', '13']);
    expect(placementGpuLayers(moe)).toBeUndefined();
  });

  it('part on the CPU and CPU only: the -ngl the placement implies', () => {
    expect(placementGpuLayers(partial)).toBe(10);
    expect(placementGpuLayers(cpu)).toBe(0);
    expect(placementArgs(cpu, recent)).toEqual([]);
  });

  it('uses only flags the build has: every flag emitted is in its --help', () => {
    for (const caps of [recent, old]) {
      for (const placement of [onGpu1, split, partial, moe]) {
        for (const arg of placementArgs(placement, caps)) if (arg.startsWith('-')) expect(caps.flags.has(arg)).toBe(true);
      }
    }
  });
});

describe('argvFor with a placement', () => {
  it('adds the placement after the level’s -c and -ngl, and lets part on the CPU set -ngl', () => {
    const argv = argvFor(spec, 'full', recent, 4000, KEY, split);
    expect(valueOf(argv, '-ngl')).toBe('all');
    expect(valueOf(argv, '--tensor-split')).toBe('12,0,20');
    expect(valueOf(argvFor(spec, 'full', recent, 4000, KEY, partial), '-ngl')).toBe('11'); // its 10 blocks and the output layer
    const onCpu = argvFor(spec, 'full', recent, 4000, KEY, cpu);
    expect(valueOf(onCpu, '-ngl')).toBe('0');
    expect(onCpu).not.toContain('--split-mode');
  });

  it('a minimal level stays on the CPU whatever the placement says', () => {
    const argv = argvFor(spec, 'minimal', recent, 4000, KEY, onGpu1);
    expect(valueOf(argv, '-ngl')).toBe('0');
    expect(argv).not.toContain('--main-gpu');
  });

  it('the embedded engine takes no split flags: its devices come through the environment', () => {
    const argv = argvFor({ ...spec, engine: 'embedded' }, 'full', EMBEDDED_CAPABILITIES, 4000, KEY, split);
    expect(argv).not.toContain('--tensor-split');
    expect(placementEnv(split, 'embedded')).toEqual({ CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: '0,2', HIP_VISIBLE_DEVICES: '0,2', GGML_VK_VISIBLE_DEVICES: '0,2' });
    expect(placementEnv(split, 'llama-server')).toEqual({ CUDA_DEVICE_ORDER: 'PCI_BUS_ID' });
    expect(placementEnv(cpu, 'embedded')).toEqual({});
  });
});

// The plan numbers the cards the budget counts; the engines are told the driver's numbers
// (issue 23): a box whose plan GPUs 0, 1, 2 are an RTX 4090 (CUDA0), an RX 7900 XTX (HIP 0,
// Vulkan 1) and an RTX 3060 (CUDA1).
describe("placement in the driver's numbers", () => {
  const box: Record<number, EngineIdentity> = {
    0: { driverIndex: { cuda: 0, vulkan: 0 }, engineDevice: 'CUDA0' },
    1: { driverIndex: { hip: 0, vulkan: 1 }, engineDevice: 'ROCm0' },
    2: { driverIndex: { cuda: 1, vulkan: 2 }, engineDevice: 'CUDA1' },
  };
  const named: EngineIdentityOf = (index) => box[index];
  const unnamed: EngineIdentityOf = (index) => (box[index] === undefined ? undefined : { driverIndex: box[index].driverIndex });
  const on = (index: number): Placement => ({ kind: 'gpu', devices: [{ index, layers: 32, bytes: 9e9 }], cpuMoeLayers: 0, hostBytes: 0 });
  const overNvidia: Placement = { kind: 'split', devices: [{ index: 2, layers: 20, bytes: 1e10 }, { index: 0, layers: 12, bytes: 6e9 }], cpuMoeLayers: 0, hostBytes: 0 };

  it("names llama-server's devices with --device, and counts --main-gpu and --tensor-split within them", () => {
    expect(placementArgs(on(2), recent, named)).toEqual(['--device', 'CUDA1', '--split-mode', 'none', '--main-gpu', '0']);
    expect(placementArgs(overNvidia, recent, named)).toEqual(['--device', 'CUDA0,CUDA1', '--split-mode', 'layer', '--tensor-split', '12,20', '--main-gpu', '1']);
  });

  it("without llama-server's names (or a build without --device), uses the backend's own numbers: the plan's GPU 2 is CUDA's 1", () => {
    expect(placementArgs(on(2), recent, unnamed)).toEqual(['--split-mode', 'none', '--main-gpu', '1']);
    expect(placementArgs(overNvidia, recent, unnamed)).toEqual(['--split-mode', 'layer', '--tensor-split', '12,20', '--main-gpu', '1']);
    expect(placementArgs(on(2), old, named)).not.toContain('--device');
  });

  it("tells the embedded engine each backend's numbers, and nothing for a backend that does not see every device", () => {
    expect(placementEnv(on(2), 'embedded', named)).toEqual({ CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: '1', GGML_VK_VISIBLE_DEVICES: '2' });
    expect(placementEnv(on(1), 'embedded', named)).toEqual({ CUDA_DEVICE_ORDER: 'PCI_BUS_ID', HIP_VISIBLE_DEVICES: '0', GGML_VK_VISIBLE_DEVICES: '1' });
    expect(placementEnv(overNvidia, 'embedded', named)).toEqual({ CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: '0,1', GGML_VK_VISIBLE_DEVICES: '0,2' });
  });

  it('argvFor passes the identities on', () => {
    expect(valueOf(argvFor(spec, 'full', recent, 4000, KEY, on(2), named), '--device')).toBe('CUDA1');
  });
});
