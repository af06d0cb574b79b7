// Fakes of the world the controller reconciles, for tests that must see exactly what it did.
//
// RecordingServer is a ServerControl that keeps an ordered log of launches and evictions,
// can fail a model's next N launches (or evictions) with a given error, and can hold a
// model's launch or eviction pending until the test releases it, so a test can look at the
// controller in the middle of an operation. FakeDesired is the DesiredProvider a test edits
// between passes. Neither uses timers: everything resolves on promise turns.
import type { DesiredProvider, DesiredState, ModelDemand, ResidentServer, ServerControl } from '../../core/controller/effects.js';
import type { LaunchLevel } from '../../core/policy/levels.js';

export type ServerCall = { op: 'launch'; modelId: string; level: LaunchLevel } | { op: 'evict'; modelId: string };

interface Gate {
  promise: Promise<void>;
  open: () => void;
  /** Whether a held launch rejects when its signal aborts (a real supervisor may take a while to stop one). */
  honourAbort: boolean;
}

function gate(honourAbort: boolean): Gate {
  let open = (): void => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open, honourAbort };
}

export class RecordingServer implements ServerControl {
  /** Every launch and evict, in the order the controller called them. */
  readonly calls: ServerCall[] = [];
  /** How many times resident() was read: one per pass. */
  residentReads = 0;
  private readonly servers = new Map<string, ResidentServer>();
  private readonly failures = new Map<string, { error: unknown; times: number }>();
  private readonly holds = new Map<string, Gate>();

  /** `deviceBytesOf` says what a launched server reports holding. */
  constructor(private readonly deviceBytesOf: (modelId: string, level: LaunchLevel) => number = () => 0) {}

  /** Puts a server in place as if an earlier run had launched it. */
  place(modelId: string, level: LaunchLevel = 'full', deviceBytes = this.deviceBytesOf(modelId, level)): void {
    this.servers.set(modelId, { modelId, level, deviceBytes });
  }

  /** The model's server ends on its own (a crash mid-run): it is no longer resident. */
  die(modelId: string): void {
    this.servers.delete(modelId);
  }

  isRunning(modelId: string): boolean {
    return this.servers.has(modelId);
  }

  /** The next `times` launches (op 'launch') or evictions (op 'evict') of the model reject with `error`. */
  fail(op: ServerCall['op'], modelId: string, error: unknown, times = 1): void {
    this.failures.set(`${op} ${modelId}`, { error, times });
  }

  /**
   * The next launch or eviction of the model stays pending until release(). A held launch
   * rejects when its signal aborts, unless `honourAbort` is false.
   */
  hold(op: ServerCall['op'], modelId: string, { honourAbort = true } = {}): void {
    this.holds.set(`${op} ${modelId}`, gate(honourAbort));
  }

  release(op: ServerCall['op'], modelId: string): void {
    const key = `${op} ${modelId}`;
    this.holds.get(key)?.open();
    this.holds.delete(key);
  }

  launches(): { modelId: string; level: LaunchLevel }[] {
    return this.calls.flatMap((c) => (c.op === 'launch' ? [{ modelId: c.modelId, level: c.level }] : []));
  }

  evictions(): string[] {
    return this.calls.flatMap((c) => (c.op === 'evict' ? [c.modelId] : []));
  }

  async resident(): Promise<ResidentServer[]> {
    this.residentReads++;
    return [...this.servers.values()].map((s) => ({ ...s }));
  }

  async launch(modelId: string, level: LaunchLevel, signal: AbortSignal): Promise<void> {
    this.calls.push({ op: 'launch', modelId, level });
    await this.pass('launch', modelId, signal);
    this.servers.set(modelId, { modelId, level, deviceBytes: this.deviceBytesOf(modelId, level) });
  }

  async evict(modelId: string): Promise<void> {
    this.calls.push({ op: 'evict', modelId });
    await this.pass('evict', modelId);
    this.servers.delete(modelId);
  }

  /** Waits for a hold and applies a scripted failure, in that order. */
  private async pass(op: ServerCall['op'], modelId: string, signal?: AbortSignal): Promise<void> {
    const key = `${op} ${modelId}`;
    const held = this.holds.get(key);
    if (held !== undefined) {
      await new Promise<void>((resolve, reject) => {
        void held.promise.then(resolve);
        if (held.honourAbort) signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    const failure = this.failures.get(key);
    if (failure !== undefined && failure.times > 0) {
      failure.times--;
      throw failure.error;
    }
  }
}

/** A DesiredProvider whose state the test edits; every read is a copy, like a fresh probe. */
export class FakeDesired implements DesiredProvider {
  reads = 0;
  /** When set, reads reject with it (a probe that cannot read the GPU). */
  readError: unknown = null;

  constructor(public state: DesiredState) {}

  async read(): Promise<DesiredState> {
    this.reads++;
    if (this.readError !== null) throw this.readError;
    return structuredClone(this.state);
  }

  model(modelId: string): ModelDemand {
    const found = this.state.models.find((m) => m.modelId === modelId);
    if (found === undefined) throw new Error(`FakeDesired: no model '${modelId}'`);
    return found;
  }

  /** Changes one model's demand in place. */
  update(modelId: string, change: Partial<ModelDemand>): void {
    Object.assign(this.model(modelId), change);
  }
}
