import { describe, expect, it } from 'vitest';
import { FakeClock, settle } from '../../support/fake-clock.js';
import { createLiveBudget, type BudgetSample, type LiveBudgetDeps } from '../../../core/gpu/live-budget.js';
import type { GpuProbe, ProbeResult } from '../../../core/gpu/gpu-probe.js';
import type { GpuDevice } from '../../../core/gpu/compute-budget.js';
import { FailedSample } from '../../../core/gpu/failed-sample.js';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const config = { reserveBytes: 512 * MiB, limitBytes: null, unifiedShare: 0.75 };

function card(usedBytes: number): GpuDevice {
  return { index: 0, name: 'NVIDIA GeForce RTX 4090', vendor: 'NVIDIA Corporation', busAddress: '0000:01:00.0', totalBytes: 24 * GiB, usedBytes, unifiedMemory: false };
}

/** A probe whose answer the test sets, that counts its calls and can be held open. */
class ScriptedProbe implements GpuProbe {
  calls = 0;
  gpus: GpuDevice[] = [card(4 * GiB)];
  failNext: Error | null = null;
  private gate: { promise: Promise<void>; open: () => void } | null = null;

  hold(): void {
    let open = (): void => {};
    const promise = new Promise<void>((resolve) => { open = resolve; });
    this.gate = { promise, open };
  }

  release(): void {
    const gate = this.gate;
    this.gate = null;
    gate?.open();
  }

  async probe(): Promise<ProbeResult> {
    this.calls++;
    const gpus = this.gpus;
    if (this.gate) await this.gate.promise;
    const error = this.failNext;
    this.failNext = null;
    if (error) throw error;
    return { gpus, host: { totalBytes: 64 * GiB, availableBytes: 48 * GiB } };
  }
}

function setup(extra: Partial<LiveBudgetDeps> = {}) {
  const clock = new FakeClock();
  const probe = new ScriptedProbe();
  const errors: unknown[] = [];
  const fired: [BudgetSample, BudgetSample | null][] = [];
  const live = createLiveBudget({ probe, clock, config: () => config, platform: 'linux', onError: (e) => errors.push(e), ...extra });
  live.onDidChange(({ budget, previous }) => fired.push([budget, previous]));
  return { clock, probe, live, errors, fired };
}

describe('LiveBudget: change detection', () => {
  it('fires for the first sample and records when it was taken', async () => {
    const { clock, live, fired } = setup();
    expect(live.current()).toBeNull();
    const sample = await live.sampleNow();
    expect(sample.totalBytes).toBe(24 * GiB - 512 * MiB - 4 * GiB);
    expect(sample.sampledAt).toBe(clock.now());
    expect(live.current()).toBe(sample);
    expect(fired).toEqual([[sample, null]]);
  });

  it('fires when another program takes VRAM and again when it gives it back', async () => {
    const { probe, live, fired } = setup();
    const first = await live.sampleNow();
    probe.gpus = [card(12 * GiB)];
    const shrunk = await live.sampleNow();
    probe.gpus = [card(4 * GiB)];
    const back = await live.sampleNow();
    expect(shrunk.totalBytes).toBe(first.totalBytes - 8 * GiB);
    expect(back.totalBytes).toBe(first.totalBytes);
    expect(fired).toEqual([[first, null], [shrunk, first], [back, shrunk]]);
  });

  it('ignores changes under 256 MiB, but catches a slow drift against the last one it fired', async () => {
    const { probe, live, fired } = setup();
    await live.sampleNow();
    for (const step of [1, 2]) {
      probe.gpus = [card(4 * GiB + step * 100 * MiB)];
      await live.sampleNow();
    }
    expect(fired).toHaveLength(1);
    expect(live.current()?.totalBytes).toBe(24 * GiB - 512 * MiB - 4 * GiB - 200 * MiB);
    probe.gpus = [card(4 * GiB + 300 * MiB)];
    await live.sampleNow();
    const [latest, previous] = fired[1] ?? [];
    expect((latest?.totalBytes ?? 0) - (previous?.totalBytes ?? 0)).toBe(-300 * MiB);
  });

  it('reads the config at each sample, so that a reloaded limit applies at the next one without a restart', async () => {
    let limitBytes: number | null = null;
    const { live, fired } = setup({ config: () => ({ ...config, limitBytes }) });
    const unlimited = await live.sampleNow();
    limitBytes = 2 * GiB;
    const limited = await live.sampleNow();
    expect(unlimited.totalBytes).toBe(24 * GiB - 512 * MiB - 4 * GiB);
    expect(limited.totalBytes).toBe(2 * GiB);
    expect(fired.map(([sample]) => sample)).toEqual([unlimited, limited]);
  });

  it('takes its threshold from the deps', async () => {
    const { probe, live, fired } = setup({ changeThresholdBytes: 64 * MiB });
    await live.sampleNow();
    probe.gpus = [card(4 * GiB + 100 * MiB)];
    await live.sampleNow();
    expect(fired).toHaveLength(2);
  });

  it('fires when the mode changes even if the total barely moves', async () => {
    const { probe, live, fired } = setup({ config: () => ({ ...config, limitBytes: 1 * GiB }) });
    await live.sampleNow();
    probe.gpus = [];
    const cpu = await live.sampleNow();
    expect(cpu.mode).toBe('cpu');
    expect(cpu.totalBytes).toBe(1 * GiB);
    expect(fired.map(([b]) => b.mode)).toEqual(['gpu', 'cpu']);
  });

  it('counts what our engines hold as ours', async () => {
    const { live } = setup({ ownUsage: async (gpus) => ({ byGpu: new Map([[gpus[0]!.index, 3 * GiB]]), hostBytes: 0 }) });
    const sample = await live.sampleNow();
    expect(sample.perGpu[0]).toMatchObject({ usedByUsBytes: 3 * GiB, usedByOthersBytes: 1 * GiB });
  });

  it('keeps calling the other listeners when one throws, and stops calling an unsubscribed one', async () => {
    const { probe, live, errors, fired } = setup();
    const boom = new Error('listener broke');
    live.onDidChange(() => { throw boom; });
    let late = 0;
    const unsubscribe = live.onDidChange(() => { late++; });
    await live.sampleNow();
    unsubscribe();
    probe.gpus = [card(10 * GiB)];
    await live.sampleNow();
    expect(fired).toHaveLength(2);
    expect(late).toBe(1);
    expect(errors).toEqual([boom, boom]);
  });
});

describe('LiveBudget: sampling', () => {
  it('a caller during a sample under way gets the next sample, shared with every other such caller', async () => {
    const { probe, live } = setup();
    probe.hold();
    const first = live.sampleNow();
    probe.gpus = [card(10 * GiB)]; // taken after the first probe began
    const second = live.sampleNow();
    const third = live.sampleNow();
    probe.release();
    expect((await first).perGpu[0]?.usedBytes).toBe(4 * GiB);
    expect(await second).toBe(await third);
    expect((await second).perGpu[0]?.usedBytes).toBe(10 * GiB);
    expect(probe.calls).toBe(2);
  });

  it('a failed probe rejects sampleNow and keeps the last good sample', async () => {
    const { probe, live, fired } = setup();
    const good = await live.sampleNow();
    probe.failNext = new Error('nvidia-smi timed out');
    await expect(live.sampleNow()).rejects.toThrow(/timed out/);
    expect(live.current()).toBe(good);
    expect(fired).toHaveLength(1);
  });

  it('start() samples at once, then each interval after the last sample ended, until stop()', async () => {
    const { clock, probe, live } = setup();
    live.start(2_000);
    await settle();
    expect(probe.calls).toBe(1);
    expect(clock.pendingDelays()).toEqual([2_000]);
    await clock.advance(1_999);
    expect(probe.calls).toBe(1);
    await clock.advance(1);
    expect(probe.calls).toBe(2);
    await clock.advance(6_000);
    expect(probe.calls).toBe(5);
    live.stop();
    expect(clock.pendingDelays()).toEqual([]);
    await clock.advance(10_000);
    expect(probe.calls).toBe(5);
    live.stop();
  });

  it('keeps sampling after a failed probe and reports the failure', async () => {
    const { clock, probe, live, errors } = setup();
    const crash = new Error('lspci crashed');
    probe.failNext = crash;
    live.start(1_000);
    await settle();
    expect(errors).toEqual([crash]);
    expect(live.current()).toBeNull();
    await clock.advance(1_000);
    expect(live.current()).not.toBeNull();
    live.stop();
  });

  it('restarting replaces the interval rather than adding a second one', async () => {
    const { clock, probe, live } = setup();
    live.start(5_000);
    await settle();
    live.start(1_000);
    await settle();
    expect(clock.pendingDelays()).toEqual([1_000]);
    await clock.advance(5_000);
    expect(probe.calls).toBe(2 + 5);
    live.stop();
  });

  it('reads an interval given as a function after each sample, and never waits less than a second', async () => {
    const { clock, probe, live } = setup();
    let busy = false;
    live.start(() => (busy ? 2_000 : 10_000));
    await settle();
    expect(clock.pendingDelays()).toEqual([10_000]);
    busy = true;
    await clock.advance(10_000);
    expect(probe.calls).toBe(2);
    expect(clock.pendingDelays()).toEqual([2_000]);
    live.start(() => 5);
    await settle();
    expect(clock.pendingDelays()).toEqual([1_000]);
    live.stop();
  });

  it('fresh() answers with the last sample while it is young enough, and samples again once it is not', async () => {
    const { clock, probe, live } = setup();
    const first = await live.sampleNow();
    await clock.advance(3_000);
    expect(await live.fresh(3_000)).toBe(first);
    expect(probe.calls).toBe(1);
    await clock.advance(1);
    const second = await live.fresh(3_000);
    expect(probe.calls).toBe(2);
    expect(second.sampledAt).toBe(clock.now());
  });

  it('fresh() judges a sample\'s age on the monotonic clock: a wall-clock step back does not keep an old one, nor a step forward drop a new one', async () => {
    const { clock, probe, live } = setup();
    const first = await live.sampleNow();
    clock.jumpWall(3_600_000);
    expect(await live.fresh(3_000)).toBe(first);
    expect(probe.calls).toBe(1);
    clock.jumpWall(-7_200_000);
    await clock.advance(3_001);
    await live.fresh(3_000);
    expect(probe.calls).toBe(2);
  });

  it('refuses an interval under one second, naming it', () => {
    const { live } = setup();
    expect(() => live.start(250)).toThrow(/at least 1000 ms, got 250/);
  });
});

describe('LiveBudget: the probe\'s notes', () => {
  it('puts what the probe had to say about its sources in the sample\'s reason', async () => {
    const probe: GpuProbe = {
      probe: async () => ({ gpus: [card(4 * GiB)], host: { totalBytes: 64 * GiB, availableBytes: 48 * GiB }, notes: ["llama-server's device list could not be read (timed out)."] }),
    };
    const live = createLiveBudget({ probe, clock: new FakeClock(), config: () => config, platform: 'linux' });
    expect((await live.sampleNow()).reason).toBe("llama-server's device list could not be read (timed out).");
  });
});

describe('LiveBudget: a vendor tool that keeps failing (issue 23)', () => {
  const second = (): GpuDevice => ({ ...card(1 * GiB), index: 1, name: 'NVIDIA GeForce RTX 3060', busAddress: '0000:03:00.0', totalBytes: 12 * GiB });
  const lost = (): FailedSample => new FailedSample('nvidia-smi answered before and gives no figures now for GPU 1 NVIDIA GeForce RTX 3060 (0000:03:00.0): Failed to initialize NVML: Driver/library version mismatch', ['0000:03:00.0']);

  it('holds the last good budget; from the third failure in a row it says why on the GPUs concerned, and the first good sample ends it', async () => {
    const { clock, probe, live, fired } = setup();
    probe.gpus = [card(4 * GiB), second()];
    const good = await live.sampleNow();
    for (let i = 0; i < 2; i++) {
      await clock.advance(2_000);
      probe.failNext = lost();
      await expect(live.sampleNow()).rejects.toThrow(/version mismatch/);
      expect(live.current()).toBe(good);
    }
    await clock.advance(2_000);
    probe.failNext = lost();
    await expect(live.sampleNow()).rejects.toThrow(/version mismatch/);
    const held = live.current();
    expect(held?.perGpu.map((g) => g.budgetBytes)).toEqual(good.perGpu.map((g) => g.budgetBytes));
    expect(held?.perGpu[0]?.warning).toBeUndefined();
    expect(held?.perGpu[1]?.warning).toMatch(/^Not measured for 3 samples in a row \(4 s\): nvidia-smi answered before .*version mismatch\. Its budget is held at the last good sample/);
    // Re-dated, so that a decision asking for a fresh sample plans on it instead of failing.
    expect(held?.sampledAt).toBe(clock.now());
    expect(await live.fresh(3_000)).toBe(held);
    expect(fired.map(([b]) => b.perGpu[1]?.warning === undefined)).toEqual([true, false]);

    await clock.advance(2_000);
    const back = await live.sampleNow();
    expect(back.perGpu.map((g) => g.warning)).toEqual([undefined, undefined]);
    expect(fired).toHaveLength(3);
  });

  it('a failure it cannot attribute to cards puts the warning on every GPU', async () => {
    const { probe, live } = setup({ failuresBeforeWarning: 1 });
    await live.sampleNow();
    probe.failNext = new Error('amd-smi answered before and fails now: timed out');
    await expect(live.sampleNow()).rejects.toThrow(/timed out/);
    expect(live.current()?.perGpu.map((g) => g.warning !== undefined)).toEqual([true]);
  });
});

describe('LiveBudget: a GPU an engine says faulted', () => {
  const second = (): GpuDevice => ({ ...card(0), index: 1, busAddress: '0000:03:00.0', measuredBy: 'nvidia-smi' });

  it('stands the last sample again at once without it, naming it as gone with the engine’s words, and fires', async () => {
    const { probe, live, fired } = setup();
    probe.gpus = [card(4 * GiB), second()];
    await live.sampleNow();
    const calls = probe.calls;
    expect(live.suspect('0000:03:00.0', "llama-server for 'chat' said: CUDA error: unspecified launch failure")).toBe(true);
    // No probe: the decision it is for (the relaunch) plans on this at once.
    expect(probe.calls).toBe(calls);
    const now = live.current() as BudgetSample;
    expect(now.perGpu.map((g) => g.index)).toEqual([0]);
    expect(now.totalBytes).toBe(24 * GiB - 512 * MiB - 4 * GiB);
    expect(now.gone).toEqual([{ index: 1, name: 'NVIDIA GeForce RTX 4090', vendor: 'NVIDIA Corporation', busAddress: '0000:03:00.0', why: "llama-server for 'chat' said: CUDA error: unspecified launch failure" }]);
    expect(fired.at(-1)?.[0]).toBe(now);
  });

  it('offers it again at the first probe begun after the suspicion that lists it, not at one already under way', async () => {
    const { probe, live } = setup();
    probe.gpus = [card(4 * GiB), second()];
    await live.sampleNow();
    probe.hold();
    const underWay = live.sampleNow();
    live.suspect('0000:03:00.0', 'CUDA error');
    probe.release();
    expect((await underWay).perGpu.map((g) => g.index)).toEqual([0]);
    const next = await live.sampleNow();
    expect(next.perGpu.map((g) => g.index)).toEqual([0, 1]);
    expect(next.gone).toBeUndefined();
  });

  it('stays suspect through probes that do not list it, and refuses a card the last probe did not list', async () => {
    const { probe, live } = setup();
    probe.gpus = [card(4 * GiB), second()];
    await live.sampleNow();
    expect(live.suspect('0000:09:00.0', 'CUDA error')).toBe(false);
    expect(live.current()?.perGpu).toHaveLength(2);
    expect(live.suspect('0000:03:00.0', 'CUDA error')).toBe(true);
    probe.gpus = [card(4 * GiB)];
    await live.sampleNow();
    // Listed again but suspected since: the first probe that lists it clears it, so until then the listing decides.
    probe.gpus = [card(4 * GiB), second()];
    expect((await live.sampleNow()).perGpu.map((g) => g.index)).toEqual([0, 1]);
  });
});
