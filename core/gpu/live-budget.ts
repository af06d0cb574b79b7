// The live budget: probes on an interval and on demand, and tells listeners when the budget
// moved enough to matter, so the daemon can trigger the controller. Another program taking
// VRAM shrinks the budget (the controller evicts low-priority models); giving it back lets
// them return.
//
// Why one sample at a time with at most one queued behind it: a probe spawns child
// processes, and nvidia-smi can stall; overlapping samples would pile up. A caller of
// sampleNow() wants numbers measured *after* it asked (the controller polls after an
// eviction until the memory is really back), so it never gets a sample already under way;
// every caller that arrives during one shares the single next one.
//
// A failed probe (a vendor tool that answered before and fails now, failed-sample.ts) keeps the
// last good sample: nothing is evicted because a tool hiccuped. After `failuresBeforeWarning`
// failures in a row the sample stands *held*: the same budgets, each affected GPU with a
// `warning` that says why (for the card, the tray and /metrics), re-dated so that a decision
// asking for a fresh sample plans on it instead of failing. The first good probe ends it.
// A GPU that is gone (gpu-probe.ts) is no failed probe: the sample goes on without it, and names it.
// A GPU an engine's log says faulted (core/engine/gpu-fault.ts) is *suspect*: at once, the last
// sample stands again without it, naming it as gone with the engine's words, so that the
// relaunch goes elsewhere; the first probe begun after that which lists it (its vendor tool
// measured it: healthy) offers it again. Its vendor tool, not the engine, has the last word.
import { computeBudget, type Budget } from './compute-budget.js';
import { FailedSample } from './failed-sample.js';
import { NO_OWN_USAGE, type OwnUsage, type OwnUsageProvider } from './own-usage.js';
import type { GpuProbe, ProbeResult } from './gpu-probe.js';
import { realClock, type Clock } from '../common/clock.js';
import { Emitter, type Event } from '../common/emitter.js';
import { errorMessage } from '../contracts/error-message.js';

export interface BudgetConfig {
  reserveBytes: number;
  limitBytes: number | null;
  /** Share of RAM the GPU may use on Apple Silicon; macOS caps what the GPU may wire near this. */
  unifiedShare: number;
}

export const DEFAULT_BUDGET_CONFIG: Readonly<BudgetConfig> = {
  reserveBytes: 512 * 1024 * 1024,
  limitBytes: null,
  unifiedShare: 0.75,
};

/**
 * A change this large fires the listeners. Why an absolute 256 MiB and not a percentage:
 * the smallest models worth scheduling are a few hundred MiB, so a 1 % rule would hide a
 * whole model's worth on a multi-GPU box (1 % of 160 GiB is 1.6 GiB), while the desktop's
 * own churn (compositor, browser tabs) moves VRAM by tens of MiB and must not trigger
 * reconcile passes every few seconds.
 */
export const DEFAULT_CHANGE_THRESHOLD_BYTES = 256 * 1024 * 1024;

/** The lowest interval start() accepts: a probe costs ~20 ms of child processes. */
export const MIN_INTERVAL_MS = 1_000;

/**
 * Failed probes in a row before the held sample says so. Why 3: one failed nvidia-smi call is
 * noise (a slow driver, a timeout), and at the 2 s interval three are six seconds of a tool that
 * really is not answering, which a person should hear about.
 */
export const DEFAULT_FAILURES_BEFORE_WARNING = 3;

export interface BudgetSample extends Budget {
  /** Epoch ms when the probe behind it finished. */
  sampledAt: number;
}

/** A sample that fired; `previous` is the sample that last fired, or null for the first one. */
export interface BudgetChange {
  budget: BudgetSample;
  previous: BudgetSample | null;
}

export type { Clock };

export interface LiveBudgetDeps {
  probe: GpuProbe;
  /** What our own engines hold; default: nothing. */
  ownUsage?: OwnUsageProvider;
  /** Read at each sample, so that a config reload (a new limit or reserve) applies at the next one. */
  config?: () => BudgetConfig;
  platform?: string;
  clock?: Clock;
  changeThresholdBytes?: number;
  /** A failed sample or a throwing listener; the sampler keeps going. Default: console.error. */
  onError?: (error: unknown) => void;
  /** Failed probes in a row before the held sample carries a warning; default DEFAULT_FAILURES_BEFORE_WARNING. */
  failuresBeforeWarning?: number;
}

export interface LiveBudget {
  /**
   * Samples at once, then `intervalMs` after each sample ends. Does not block. Calling it
   * again restarts with the new interval. Throws a RangeError below MIN_INTERVAL_MS.
   * `intervalMs` may be a function, read after each sample (a cadence that depends on what
   * runs); an answer below MIN_INTERVAL_MS counts as MIN_INTERVAL_MS.
   */
  start(intervalMs: number | (() => number)): void;
  /** Stops the interval; a sample under way still completes and is recorded. Idempotent. */
  stop(): void;
  /** The last sample (held, with warnings, after repeated failures: see the header), or null before the first one. Does not block. */
  current(): BudgetSample | null;
  /**
   * Probes now and resolves with a sample taken after this call (see the header). Fires
   * the listeners first when it changed enough. Rejects when the probe or the own-usage
   * query fails; current() then keeps the last good sample (held once failures repeat).
   */
  sampleNow(): Promise<BudgetSample>;
  /**
   * The last sample if it was taken within `maxAgeMs`, else a new one (sampleNow): for a
   * decision that must not rest on old numbers while the interval is long. Rejects as sampleNow.
   */
  fresh(maxAgeMs: number): Promise<BudgetSample>;
  /**
   * Fires synchronously after each sample that differs from the last fired one by mode, by
   * number of GPUs, by ≥ the threshold in total bytes, in its warnings (a sample becoming held,
   * or measured again), or in the GPUs that are gone; the first sample always fires.
   */
  readonly onDidChange: Event<BudgetChange>;
  /**
   * Suspects the GPU at `busAddress` (see the header): the last sample stands again at once
   * without it, `why` naming it in `gone`, until a probe begun after this call lists it.
   * False, and nothing changes, when the last probe listed no GPU there.
   */
  suspect(busAddress: string, why: string): boolean;
}

export function createLiveBudget(deps: LiveBudgetDeps): LiveBudget {
  const configNow = deps.config ?? (() => DEFAULT_BUDGET_CONFIG);
  const platform = deps.platform ?? process.platform;
  const clock: Clock = deps.clock ?? realClock;
  const threshold = deps.changeThresholdBytes ?? DEFAULT_CHANGE_THRESHOLD_BYTES;
  const onError = deps.onError ?? ((error: unknown) => console.error('[gpu] live budget:', error));
  const failuresBeforeWarning = deps.failuresBeforeWarning ?? DEFAULT_FAILURES_BEFORE_WARNING;
  const changes = new Emitter<BudgetChange>('the live budget', (_source, error) => onError(error));

  let latest: BudgetSample | null = null;
  /** When `latest` was taken, on the clock's elapsed(): its age decides `fresh` (its sampledAt is the epoch people read). */
  let latestAt = 0;
  /** The last sample a probe measured; what a held sample repeats. */
  let lastGood: BudgetSample | null = null;
  let failures = 0;
  let failingSince = 0;
  let lastFired: BudgetSample | null = null;
  let inFlight: Promise<BudgetSample> | null = null;
  let queued: Promise<BudgetSample> | null = null;
  let timer: unknown = null;
  let generation = 0;
  /** Probes begun so far: a suspect is cleared only by one begun after it was suspected. */
  let probesBegun = 0;
  /** Suspect GPUs by bus address: why, and probesBegun when suspected. */
  const suspects = new Map<string, { why: string; since: number }>();
  /** What the last probe that did not fail measured: a suspicion re-prices it without a probe. */
  let lastMeasured: { probe: ProbeResult; own: OwnUsage } | null = null;

  async function takeSample(): Promise<BudgetSample> {
    try {
      const sample = await measure();
      failures = 0;
      lastGood = sample;
      record(sample);
      return sample;
    } catch (error) {
      if (failures++ === 0) failingSince = clock.elapsed();
      if (lastGood !== null && failures >= failuresBeforeWarning) record(held(lastGood, error));
      throw error;
    }
  }

  async function measure(): Promise<BudgetSample> {
    const begun = ++probesBegun;
    const probe = await deps.probe.probe();
    const own = deps.ownUsage === undefined ? NO_OWN_USAGE : await deps.ownUsage(probe.gpus);
    for (const [bus, { since }] of suspects) if (since < begun && probe.gpus.some((gpu) => gpu.busAddress === bus)) suspects.delete(bus);
    lastMeasured = { probe, own };
    return budgetOf(probe, own);
  }

  /** The budget of a probe's figures, less the suspect GPUs, which it names as gone. */
  function budgetOf(probe: ProbeResult, own: OwnUsage): BudgetSample {
    const { displays, host, notes } = probe;
    const suspected = (bus: string | null) => (bus === null ? undefined : suspects.get(bus));
    const gpus = probe.gpus.filter((gpu) => suspected(gpu.busAddress) === undefined);
    const gone = [
      ...(probe.gone ?? []),
      ...probe.gpus.flatMap((gpu) => {
        const suspect = suspected(gpu.busAddress);
        return suspect === undefined ? [] : [{ index: gpu.index, name: gpu.name, vendor: gpu.vendor, busAddress: gpu.busAddress as string, why: suspect.why }];
      }),
    ];
    const config = configNow();
    const budget = computeBudget({
      gpus,
      host,
      reserveBytes: config.reserveBytes,
      limitBytes: config.limitBytes,
      unifiedShare: config.unifiedShare,
      ourUsageByGpu: own.byGpu,
      ourHostBytes: own.hostBytes,
      platform,
      probeNotes: notes ?? [],
      displays: displays ?? [],
      gone,
    });
    return { ...budget, sampledAt: clock.now() };
  }

  function suspect(busAddress: string, why: string): boolean {
    if (lastMeasured === null || !lastMeasured.probe.gpus.some((gpu) => gpu.busAddress === busAddress)) return false;
    suspects.set(busAddress, { why, since: probesBegun });
    const sample = budgetOf(lastMeasured.probe, lastMeasured.own);
    lastGood = sample;
    record(sample);
    return true;
  }

  /** The last good sample standing in for a failed one: its GPUs the failure concerns say why. */
  function held(good: BudgetSample, error: unknown): BudgetSample {
    const concerns = (busAddress: string | null): boolean => !(error instanceof FailedSample) || (busAddress !== null && error.busAddresses.includes(busAddress));
    const seconds = Math.round((clock.elapsed() - failingSince) / 1000);
    const warning = `Not measured for ${failures} samples in a row (${seconds} s): ${errorMessage(error)}. Its budget is held at the last good sample; nothing is evicted for it, and it is measured again at the next sample that succeeds.`;
    return { ...good, perGpu: good.perGpu.map((gpu) => (concerns(gpu.busAddress) ? { ...gpu, warning } : gpu)), sampledAt: clock.now() };
  }

  function record(sample: BudgetSample): void {
    latest = sample;
    latestAt = clock.elapsed();
    if (changedEnough(lastFired, sample, threshold)) {
      const previous = lastFired;
      lastFired = sample;
      changes.fire({ budget: sample, previous });
    }
  }

  function sampleNow(): Promise<BudgetSample> {
    if (inFlight === null) {
      inFlight = takeSample().finally(() => {
        inFlight = null;
      });
      return inFlight;
    }
    queued ??= inFlight
      .catch(() => undefined)
      .then(() => {
        queued = null;
        return sampleNow();
      });
    return queued;
  }

  function stop(): void {
    generation++;
    if (timer !== null) clock.clearTimeout(timer);
    timer = null;
  }

  function start(intervalMs: number | (() => number)): void {
    if (typeof intervalMs === 'number' && !(intervalMs >= MIN_INTERVAL_MS)) {
      throw new RangeError(`budget sampling interval must be at least ${MIN_INTERVAL_MS} ms, got ${intervalMs}`);
    }
    const next = typeof intervalMs === 'number' ? () => intervalMs : () => Math.max(MIN_INTERVAL_MS, intervalMs());
    stop();
    const mine = generation;
    const tick = (): void => {
      timer = null;
      sampleNow()
        .catch(onError)
        .finally(() => {
          if (generation === mine) timer = clock.setTimeout(tick, next());
        });
    };
    tick();
  }

  return {
    start,
    stop,
    current: () => latest,
    sampleNow,
    fresh: (maxAgeMs) => (latest !== null && clock.elapsed() - latestAt <= maxAgeMs ? Promise.resolve(latest) : sampleNow()),
    onDidChange: changes.event,
    suspect,
  };
}

function changedEnough(before: Budget | null, after: Budget, thresholdBytes: number): boolean {
  if (before === null) return true;
  if (before.mode !== after.mode || before.perGpu.length !== after.perGpu.length) return true;
  if (before.perGpu.some((gpu, i) => (gpu.warning === undefined) !== (after.perGpu[i]?.warning === undefined))) return true;
  if ((before.gone ?? []).map((g) => g.busAddress).join() !== (after.gone ?? []).map((g) => g.busAddress).join()) return true;
  return Math.abs(after.totalBytes - before.totalBytes) >= thresholdBytes;
}
