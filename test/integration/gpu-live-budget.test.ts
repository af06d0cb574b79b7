// The real probe (systeminformation → fake lspci and nvidia-smi on PATH) and the live budget,
// in a child process, the way the daemon runs them. The fakes describe a workstation with an
// RTX 4090 (24 GB) and an RTX 3060 (12 GB); the test plays "another program" by rewriting
// the memory the fake driver reports between samples.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BudgetSample } from '../../core/gpu/live-budget.js';
import type { ProbeResult } from '../../core/gpu/gpu-probe.js';
import { ProbeChild } from '../support/probe-child.js';

const MiB = 1024 ** 2;

const RTX4090 = '00000000:01:00.0';
const RTX3060 = '00000000:02:00.0';
const OUR_ENGINE_PID = 4242;
const RESERVE_MIB = 512;
// From workstation/devices.csv: total and driver-reserved MiB per card.
const CARD: Record<string, { total: number; reserved: number }> = { [RTX4090]: { total: 24564, reserved: 346 }, [RTX3060]: { total: 12288, reserved: 262 } };

let stateDir: string;
let child: ProbeChild;

/** What the fake driver reports: memory.used per card, and the compute processes. */
async function driverSays(used: Record<string, number>, apps: [string, number, number][]): Promise<void> {
  await writeFile(join(stateDir, 'memory-used.csv'), Object.entries(used).map(([bus, mib]) => `${bus}, ${mib}\n`).join(''));
  await writeFile(join(stateDir, 'compute-apps.csv'), apps.map(([bus, pid, mib]) => `${bus}, ${pid}, ${mib}\n`).join(''));
}

/** Our engine holds 6144 MiB of the 4090; a desktop app 1200 MiB; the 3060 idles at 0. */
const baseline = {
  used: { [RTX4090]: 7600, [RTX3060]: 0 },
  apps: [[RTX4090, OUR_ENGINE_PID, 6144], [RTX4090, 1888, 1200]] as [string, number, number][],
};

/** The budget of one card in MiB, by the rule: total − reserve − (used − ours), used = total − free. */
function expectedBudgetMiB(bus: string, usedMiB: number, oursMiB: number): number {
  const card = CARD[bus]!;
  const free = card.total - card.reserved - usedMiB;
  const usedByEveryone = card.total - free;
  return card.total - RESERVE_MIB - (usedByEveryone - oursMiB);
}

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'llmtray-fake-gpu-'));
  await driverSays(baseline.used, baseline.apps);
  child = ProbeChild.start({ ourPids: [OUR_ENGINE_PID], reserveBytes: RESERVE_MIB * MiB, limitBytes: null }, { FAKE_GPU_STATE_DIR: stateDir });
});

afterAll(async () => {
  await child?.close();
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

describe('GPU probe and live budget against fake lspci + nvidia-smi', () => {
  it('probes the 2-GPU workstation through systeminformation', async () => {
    const [message] = await child.request('probe');
    expect(message?.type).toBe('probe');
    const { gpus, host } = (message as { result: ProbeResult }).result;
    expect(gpus).toEqual([
      {
        index: 0, name: 'NVIDIA GeForce RTX 4090', vendor: 'NVIDIA Corporation', busAddress: '0000:01:00.0',
        totalBytes: 24564 * MiB, usedBytes: (7600 + 346) * MiB, unifiedMemory: false,
        measuredBy: 'nvidia-smi', deviceClass: 'nvidia:rtx-4090', driverIndex: { cuda: 0 },
      },
      {
        // nvidia-smi said memory.used 0, which si drops: used comes from total − free.
        index: 1, name: 'NVIDIA GeForce RTX 3060', vendor: 'NVIDIA Corporation', busAddress: '0000:02:00.0',
        totalBytes: 12288 * MiB, usedBytes: 262 * MiB, unifiedMemory: false,
        measuredBy: 'nvidia-smi', deviceClass: 'nvidia:rtx-3060', driverIndex: { cuda: 1 },
      },
    ]);
    expect(host.totalBytes).toBeGreaterThan(0);
    expect(host.availableBytes).toBeGreaterThan(0);
    expect(host.availableBytes).toBeLessThanOrEqual(host.totalBytes);
  });

  it('fires the change callback when another program takes VRAM, not for small churn, and again when it is given back', async () => {
    const first = await child.request('sample');
    expect(first.map((m) => m.type)).toEqual(['changed', 'sampled']);
    const start = (first[1] as { budget: BudgetSample }).budget;
    expect(start.mode).toBe('gpu');
    expect(start.perGpu.map((g) => g.usedByUsBytes)).toEqual([6144 * MiB, 0]);
    expect(start.perGpu.map((g) => g.budgetBytes)).toEqual([
      expectedBudgetMiB(RTX4090, 7600, 6144) * MiB,
      expectedBudgetMiB(RTX3060, 0, 0) * MiB,
    ]);
    expect(start.totalBytes).toBe((expectedBudgetMiB(RTX4090, 7600, 6144) + expectedBudgetMiB(RTX3060, 0, 0)) * MiB);

    // Another program (a game, a training run) takes 8 GiB of the 3060.
    await driverSays({ ...baseline.used, [RTX3060]: 8192 }, [...baseline.apps, [RTX3060, 31337, 8192]]);
    const taken = await child.request('sample');
    expect(taken.map((m) => m.type)).toEqual(['changed', 'sampled']);
    const shrunk = taken[0] as { budget: BudgetSample; previous: BudgetSample };
    expect(shrunk.previous.totalBytes).toBe(start.totalBytes);
    expect(shrunk.budget.totalBytes).toBe(start.totalBytes - 8192 * MiB);
    expect(shrunk.budget.perGpu[1]?.usedByOthersBytes).toBe((8192 + 262) * MiB);

    // The desktop's own churn: 100 MiB more on the 4090 is not worth a reconcile pass.
    await driverSays({ [RTX4090]: 7700, [RTX3060]: 8192 }, [...baseline.apps, [RTX3060, 31337, 8192]]);
    const churn = await child.request('sample');
    expect(churn.map((m) => m.type)).toEqual(['sampled']);
    expect((churn[0] as { budget: BudgetSample }).budget.totalBytes).toBe(start.totalBytes - 8292 * MiB);

    // The program exits and gives the memory back: the budget returns, so models can too.
    await driverSays(baseline.used, baseline.apps);
    const back = await child.request('sample');
    expect(back.map((m) => m.type)).toEqual(['changed', 'sampled']);
    const grown = back[0] as { budget: BudgetSample; previous: BudgetSample };
    expect(grown.previous.totalBytes).toBe(start.totalBytes - 8192 * MiB);
    expect(grown.budget.totalBytes).toBe(start.totalBytes);
  });
});
