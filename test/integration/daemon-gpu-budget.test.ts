// Issue 4's promise through the real daemon: the budget is live. VRAM that other programs take
// shrinks it, and the controller moves the lowest-priority idle model off the card to give it
// back (partly onto the CPU, where host RAM holds the rest); giving the memory back moves that
// model back onto a card, whole.
//
// The daemon runs as a child with the fake `lspci` and `nvidia-smi` of test/fixtures/fake-gpu
// first on PATH, so systeminformation sees a workstation with an RTX 4090 and an RTX 3060 and
// the budget is in 'gpu' mode. The test plays "another program" by rewriting the memory the
// fake driver reports; the daemon notices on its own 2 s sample. The engines are real: they are
// launched for the GPU (-ngl all), and node-llama-cpp, finding no real GPU here, runs them on
// the CPU. The fake driver never lists our engines' pids, so "used by others" is all it reports.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { generateDemoModels } from '../../core/catalog/demo/demo-models.js';
import type { ModelView, Snapshot } from '../../core/contracts/snapshot.js';
import { eventually, isProcessAlive, makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

const MiB = 1024 ** 2;
const fakeDir = resolve(import.meta.dirname, '../fixtures/fake-gpu');

const RTX4090 = '00000000:01:00.0';
const RTX3060 = '00000000:02:00.0';
// From workstation/devices.csv: total and driver-reserved MiB per card.
const CARD = { [RTX4090]: { total: 24564, reserved: 346 }, [RTX3060]: { total: 12288, reserved: 262 } };
const RESERVE_MIB = 64;
/** "Another program" in the fake driver's process list; never one of ours. */
const OTHER_PID = 31337;

/** Kept first under pressure. */
const HIGH = 'demo-draft';
/** Evicted first under pressure. */
const LOW = 'demo-tiny';

let workDir: string;
let stateDir: string;
let daemon: DaemonProcess;

/** What the fake driver reports as memory.used per card, in MiB, all of it another program's. */
async function driverSays(usedMiB: Record<string, number>): Promise<void> {
  await writeFile(join(stateDir, 'memory-used.csv'), Object.entries(usedMiB).map(([bus, mib]) => `${bus}, ${mib}\n`).join(''));
  const apps = Object.entries(usedMiB).filter(([, mib]) => mib > 0);
  await writeFile(join(stateDir, 'compute-apps.csv'), apps.map(([bus, mib]) => `${bus}, ${OTHER_PID}, ${mib}\n`).join(''));
}

/** The fake driver's memory.used (MiB) on a card that leaves our models `budgetMiB` of it. */
function usedLeaving(bus: keyof typeof CARD, budgetMiB: number): number {
  const card = CARD[bus];
  return card.total - card.reserved - RESERVE_MIB - budgetMiB;
}

/** Bytes other programs hold on a card by the driver's figures: used = total − free = reserved + memory.used, at most total. */
function othersBytes(bus: keyof typeof CARD, usedMiB: number): number {
  const card = CARD[bus];
  return Math.min(card.total, card.reserved + usedMiB) * MiB;
}

const find = (snapshot: Snapshot, id: string): ModelView => {
  const model = snapshot.models.find((m) => m.id === id);
  if (model === undefined) throw new Error(`/api/state has no model '${id}'`);
  return model;
};

async function load(id: string): Promise<void> {
  const res = await daemon.api(`/api/models/${id}/load`, { method: 'POST' });
  expect(res.status, await res.clone().text()).toBe(200);
}

const quiet = { [RTX4090]: 0, [RTX3060]: 0 };

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-gpu-budget-'));
  stateDir = join(workDir, 'driver');
  await mkdir(stateDir);
  await driverSays(quiet);
  const models = await generateDemoModels(workDir);
  const configPath = join(workDir, 'config.yaml');
  // No `limit`: the budget is the fake cards'. A long idle TTL keeps both wanted for the whole
  // test, so what moves them is the budget alone.
  await writeFile(
    configPath,
    `modelDirs: []
budget:
  reserve: ${RESERVE_MIB}MiB
models:
  - id: ${LOW}
    path: ${JSON.stringify(models.tiny.path)}
    ctx: 2048
    priority: 1
    idleTtl: 10m
  - id: ${HIGH}
    path: ${JSON.stringify(models.draft.path)}
    ctx: 2048
    priority: 5
    idleTtl: 10m
`,
  );
  daemon = await startDaemonProcess({
    dataDir: await makeDataDir(),
    config: configPath,
    env: { PATH: `${fakeDir}${delimiter}${process.env.PATH ?? ''}`, FAKE_GPU_STATE_DIR: stateDir },
  });
});

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('the live GPU budget in the running daemon', () => {
  let highPid: number;
  let lowPid: number;

  it('sees both fake GPUs and runs both models on their budget', async () => {
    const start = await daemon.state();
    expect(start.budget.mode).toBe('gpu');
    expect(start.budget.gpus.map((g) => g.name)).toEqual(['NVIDIA GeForce RTX 4090', 'NVIDIA GeForce RTX 3060']);
    expect(start.budget.gpus.map((g) => g.budgetBytes)).toEqual([
      (CARD[RTX4090].total - RESERVE_MIB - CARD[RTX4090].reserved) * MiB,
      (CARD[RTX3060].total - RESERVE_MIB - CARD[RTX3060].reserved) * MiB,
    ]);

    const estimatesBefore = [HIGH, LOW].map((id) => find(start, id).estimateBytes.full);
    await load(HIGH);
    await load(LOW);
    // Settled: both ready and measured once.
    const settled = await eventually('both models ready and measured', async () => {
      const s = await daemon.state();
      return [HIGH, LOW].every((id) => find(s, id).status.state === 'ready' && find(s, id).measuredBytes !== null) ? s : undefined;
    });
    // The fake driver does not list our engines and they run on the CPU here, so what was
    // measured is host RSS: it must not be learned as the models' GPU footprint.
    expect([HIGH, LOW].map((id) => find(settled, id).estimateBytes.full)).toEqual(estimatesBefore);
    expect(find(settled, HIGH).status.level).toBe('full');
    expect(find(settled, LOW).status.level).toBe('full');
    highPid = find(settled, HIGH).upstream!.pid;
    lowPid = find(settled, LOW).upstream!.pid;
    // Each on one card of its own budget, as its placement says.
    for (const id of [HIGH, LOW]) {
      const placement = find(settled, id).placement;
      expect(placement?.kind).toBe('gpu');
      expect([0, 1]).toContain(placement?.devices[0]?.index);
    }

    // The engine launched for the GPU really serves (node-llama-cpp falls back to the CPU here).
    const res = await fetch(`${daemon.endpoint}/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: HIGH, prompt: 'hello', max_tokens: 2 }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  });

  it('moves the lower-priority idle model partly onto the CPU when another program takes the cards, and keeps the other whole on the card with room', async () => {
    const before = await daemon.state();
    const highBytes = find(before, HIGH).estimateBytes.full;
    const lowBytes = find(before, LOW).estimateBytes.full;
    expect(lowBytes).toBeGreaterThan(2 * MiB); // the half-model margin below must be at least a MiB
    // Room for HIGH and half of LOW: all of the 3060 and nearly all of the 4090 are taken.
    const leftMiB = Math.ceil((highBytes + Math.floor(lowBytes / 2)) / MiB);
    const taken = { [RTX4090]: usedLeaving(RTX4090, leftMiB), [RTX3060]: CARD[RTX3060].total - CARD[RTX3060].reserved };
    await driverSays(taken);

    // LOW no longer fits beside HIGH on any card: it is stopped and launched again with as many
    // of its layers as fit on the 4090, the rest in host RAM (its idle TTL still holds it wanted).
    const pressed = await eventually(`${LOW} relaunched partly on the CPU, ${HIGH} whole on the 4090`, async () => {
      const s = await daemon.state();
      const low = find(s, LOW);
      const high = find(s, HIGH);
      const moved = low.status.state === 'ready' && low.upstream !== null && low.upstream.pid !== lowPid && (low.placement?.kind === 'partial' || low.placement?.kind === 'cpu');
      return moved && high.status.state === 'ready' && high.placement?.kind === 'gpu' && high.placement.devices[0]?.index === 0 ? s : undefined;
    });
    expect(pressed.budget.budgetBytes).toBe(leftMiB * MiB);
    expect(pressed.budget.gpus.map((g) => g.usedByOthersBytes)).toEqual([othersBytes(RTX4090, taken[RTX4090]), othersBytes(RTX3060, taken[RTX3060])]);
    expect(pressed.budget.gpus.map((g) => g.budgetBytes)).toEqual([leftMiB * MiB, 0]);
    expect(isProcessAlive(lowPid)).toBe(false);
    const low = find(pressed, LOW);
    expect(low.placement?.hostBytes).toBeGreaterThan(0);
    expect(low.status.unschedulableReason).toBeNull();
    expect(pressed.plan?.unschedulable).toEqual([]);
    // The picture per card: what the placements put there, nothing of ours on the full 3060,
    // and the 4090 within its budget.
    const ours = (index: number) => pressed.budget.gpus[index]?.holders.filter((h) => h.kind === 'model').map((h) => h.modelId);
    expect(ours(0)).toEqual(low.placement?.kind === 'partial' ? expect.arrayContaining([HIGH, LOW]) : [HIGH]);
    expect(ours(1)).toEqual([]);
    const onCard = (pressed.budget.gpus[0]?.holders ?? []).filter((h) => h.kind === 'model').reduce((sum, h) => sum + h.bytes, 0);
    expect(onCard).toBeLessThanOrEqual(leftMiB * MiB);
    lowPid = low.upstream!.pid;

    // HIGH stays where it was if that was the 4090; moved there from the full 3060 otherwise.
    const high = find(pressed, HIGH);
    expect(high.status.unschedulableReason).toBeNull();
    if (high.upstream?.pid !== highPid) expect(isProcessAlive(highPid)).toBe(false);
    highPid = high.upstream!.pid;
  });

  it('moves the idle model back whole onto a card when the memory is given back', async () => {
    await driverSays(quiet);
    // No new load or request is needed: the model is idle and still wanted (its 10 m idle TTL
    // runs from the load above), so the controller moves it up as soon as a card holds it whole.
    const back = await eventually(`${LOW} ready whole on a card after the memory came back`, async () => {
      const s = await daemon.state();
      return find(s, LOW).status.state === 'ready' && find(s, LOW).placement?.kind === 'gpu' ? s : undefined;
    });
    const low = find(back, LOW);
    expect(low.upstream?.pid).not.toBe(lowPid);
    expect(low.status.unschedulableReason).toBeNull();
    expect(back.plan?.unschedulable).toEqual([]);
    // Memory given back moves nothing that runs: HIGH stays where it is.
    expect(find(back, HIGH).upstream?.pid).toBe(highPid);
    expect(back.budget.gpus.map((g) => g.usedByOthersBytes)).toEqual([othersBytes(RTX4090, 0), othersBytes(RTX3060, 0)]);
  });
});
