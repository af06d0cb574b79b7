// The real probe and live budget, in a child process as the daemon runs them, on machines
// beyond NVIDIA: fake lspci, nvidia-smi, amd-smi and llama-server on PATH describe (1) a box
// with two AMD RX 7900 XTX and (2) a box with an RTX 4090 and an RX 7900 XTX. Every card is
// seen by several sources (lspci, its vendor's tool, llama-server's list) and must be counted
// once, measured by its own tool, and named after the engine's device. Our engine's memory on
// the AMD card comes from its DRM fdinfo, which the test writes into a fake /proc.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BudgetSample } from '../../core/gpu/live-budget.js';
import type { ProbeResult } from '../../core/gpu/gpu-probe.js';
import { FAKE_GPU_DIR, ProbeChild, type ProbeMessage } from '../support/probe-child.js';

const MiB = 1024 ** 2;
const RESERVE_MIB = 512;
const OUR_ENGINE_PID = 4242;
const XTX_MIB = 24560; // amd-pair/amd-cards.csv, mixed/amd-cards.csv
const CARD_A = '0000:03:00.0';
const CARD_B = '0000:0c:00.0';

let workDir: string;

const probed = (messages: ProbeMessage[]): ProbeResult => (messages.at(-1) as { result: ProbeResult }).result;
const sampled = (messages: ProbeMessage[]): BudgetSample => (messages.at(-1) as { budget: BudgetSample }).budget;

async function amdDriverSays(stateDir: string, usedMiB: Record<string, number>): Promise<void> {
  await writeFile(join(stateDir, 'amd-memory-used.csv'), Object.entries(usedMiB).map(([bus, mib]) => `${bus}, ${mib}\n`).join(''));
}

/** Our engine's DRM client on an AMD card, as /proc/<pid>/fdinfo shows it (keys as in test/fixtures/gpu-tools/fdinfo-amdgpu-common-keys.txt). */
async function ourEngineHolds(procRoot: string, bus: string, mib: number): Promise<void> {
  const dir = join(procRoot, String(OUR_ENGINE_PID), 'fdinfo');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, '0'), 'pos:\t0\nflags:\t0100002\nmnt_id:\t25\nino:\t6\n');
  await writeFile(join(dir, '12'), `pos:\t0\nflags:\t02100002\ndrm-driver:\tamdgpu\ndrm-client-id:\t31\ndrm-pdev:\t${bus}\ndrm-total-vram:\t${mib * 1024} KiB\ndrm-resident-vram:\t${mib * 1024} KiB\ndrm-memory-vram:\t${mib * 1024} KiB\n`);
}

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-fake-gpus-'));
});

afterAll(async () => {
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('a box with two AMD GPUs (amd-smi, ROCm llama-server)', () => {
  let child: ProbeChild;
  let stateDir: string;
  let procRoot: string;

  beforeAll(async () => {
    stateDir = join(workDir, 'amd-pair');
    procRoot = join(workDir, 'amd-pair-proc');
    await mkdir(stateDir, { recursive: true });
    // The desktop holds 700 MiB of card A; our engine 4096 MiB more.
    await amdDriverSays(stateDir, { [CARD_A]: 700 + 4096, [CARD_B]: 20 });
    await ourEngineHolds(procRoot, CARD_A, 4096);
    child = ProbeChild.start(
      { ourPids: [OUR_ENGINE_PID], reserveBytes: RESERVE_MIB * MiB, limitBytes: null, llamaServer: join(FAKE_GPU_DIR, 'engine/llama-server'), procRoot },
      { FAKE_GPU_BOX: 'amd-pair', FAKE_GPU_STATE_DIR: stateDir },
    );
  });

  afterAll(async () => {
    await child?.close();
  });

  it('sees both cards once each, measured by amd-smi, of one class, named after ROCm\'s devices', async () => {
    const { gpus, notes } = probed(await child.request('probe'));
    expect(notes).toBeUndefined();
    expect(gpus).toEqual([
      {
        index: 0, name: 'AMD Radeon RX 7900 XTX', vendor: 'Advanced Micro Devices, Inc. [AMD/ATI]', busAddress: CARD_A,
        totalBytes: XTX_MIB * MiB, usedBytes: (700 + 4096) * MiB, unifiedMemory: false,
        measuredBy: 'amd-smi', deviceClass: 'amd:rx-7900-xtx', engineDevice: 'ROCm0', driverIndex: { hip: 0 },
      },
      {
        index: 1, name: 'AMD Radeon RX 7900 XTX', vendor: 'Advanced Micro Devices, Inc. [AMD/ATI]', busAddress: CARD_B,
        totalBytes: XTX_MIB * MiB, usedBytes: 20 * MiB, unifiedMemory: false,
        measuredBy: 'amd-smi', deviceClass: 'amd:rx-7900-xtx', engineDevice: 'ROCm1', driverIndex: { hip: 1 },
      },
    ]);
  });

  it('budgets each card, counting our engine\'s memory (from fdinfo) as ours, and shrinks when another program takes a card', async () => {
    const first = sampled(await child.request('sample'));
    expect(first.mode).toBe('gpu');
    expect(first.perGpu.map((g) => [g.deviceClass, g.engineDevice, g.usedByUsBytes / MiB, g.usedByOthersBytes / MiB, g.budgetBytes / MiB])).toEqual([
      ['amd:rx-7900-xtx', 'ROCm0', 4096, 700, XTX_MIB - RESERVE_MIB - 700],
      ['amd:rx-7900-xtx', 'ROCm1', 0, 20, XTX_MIB - RESERVE_MIB - 20],
    ]);
    expect(first.reason).toBeUndefined();

    // A training run takes 16 GiB of card B: the budget shrinks by it and the listeners hear.
    await amdDriverSays(stateDir, { [CARD_A]: 700 + 4096, [CARD_B]: 20 + 16384 });
    const taken = await child.request('sample');
    expect(taken.map((m) => m.type)).toEqual(['changed', 'sampled']);
    expect(sampled(taken).totalBytes).toBe(first.totalBytes - 16384 * MiB);
    expect(sampled(taken).perGpu[1]?.usedByOthersBytes).toBe((20 + 16384) * MiB);
  });
});

describe('a box with an NVIDIA and an AMD GPU (nvidia-smi, amd-smi, Vulkan llama-server)', () => {
  let child: ProbeChild;

  beforeAll(async () => {
    const stateDir = join(workDir, 'mixed');
    await mkdir(stateDir, { recursive: true });
    await writeFile(join(stateDir, 'memory-used.csv'), '00000000:01:00.0, 600\n');
    await writeFile(join(stateDir, 'compute-apps.csv'), '');
    await amdDriverSays(stateDir, { [CARD_A]: 400 });
    child = ProbeChild.start(
      { ourPids: [], reserveBytes: RESERVE_MIB * MiB, limitBytes: null, llamaServer: join(FAKE_GPU_DIR, 'engine/llama-server') },
      { FAKE_GPU_BOX: 'mixed', FAKE_GPU_STATE_DIR: stateDir },
    );
  });

  afterAll(async () => {
    await child?.close();
  });

  it('counts each card once, measured by its own vendor\'s tool, in two classes, named after Vulkan\'s devices', async () => {
    const { gpus, notes } = probed(await child.request('probe'));
    expect(notes).toBeUndefined();
    expect(gpus.map((g) => [g.index, g.busAddress, g.name, g.measuredBy, g.deviceClass, g.engineDevice])).toEqual([
      [0, '0000:01:00.0', 'NVIDIA GeForce RTX 4090', 'nvidia-smi', 'nvidia:rtx-4090', 'Vulkan0'],
      [1, CARD_A, 'AMD Radeon RX 7900 XTX', 'amd-smi', 'amd:rx-7900-xtx', 'Vulkan1'],
    ]);
    // The 4090's figures are nvidia-smi's (with the driver's 346 MiB reservation), not Vulkan's.
    expect(gpus.map((g) => [g.totalBytes, g.usedBytes])).toEqual([[24564 * MiB, (600 + 346) * MiB], [XTX_MIB * MiB, 400 * MiB]]);
  });

  it('budgets both cards in gpu mode, each with its class', async () => {
    const budget = sampled(await child.request('sample'));
    expect(budget.mode).toBe('gpu');
    expect(budget.perGpu.map((g) => [g.deviceClass, g.budgetBytes / MiB])).toEqual([
      ['nvidia:rtx-4090', 24564 - RESERVE_MIB - (600 + 346)],
      ['amd:rx-7900-xtx', XTX_MIB - RESERVE_MIB - 400],
    ]);
    expect(budget.totalBytes).toBe(budget.perGpu.reduce((sum, g) => sum + g.budgetBytes, 0));
  });
});
