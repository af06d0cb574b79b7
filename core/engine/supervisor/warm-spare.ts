// The warm spare: one embedded engine process with its runtime started and no model, kept so
// that the next launch adopts it instead of paying Node's start, node-llama-cpp's import and the
// backend's initialisation again (core/engine/embedded/spare-mode.ts says what the process does).
//
// The supervisor owns it like every server (one owner of a process's life): the spare is a
// ServerProcess from its spawn, in state 'spare' (server-process.ts: the spawning, its lines, its
// exit and its one state are that file's); the launch that adopts it carries on with that very
// object. This file is only the policy: when to keep, start, hold or end one, the retry after
// deaths, and its record in engines.json so that a crashed run's spare is swept as an orphan; its
// pid is counted as ours. Rules, each for a failure it prevents:
// - Kept only while the daemon says there is room for it (`want`), and only on the CPU (the
//   spare starts a CPU backend; see spare-mode.ts): it must never cost a model its place, so it
//   lives in memory the plan leaves free, and gives it back first.
// - A launch adopts it, or ends it before starting its own process: a launch the plan counted
//   into free memory must not find that memory still held by a spare. An adopted spare's memory
//   becomes the launched model's runtime, which the model's footprint already counts on the CPU.
// - Adopted only when the launch is what a fresh spawn would run: the same program, the same
//   environment of its own, every layer on the CPU (so no GPU backend, and no GPU-choosing
//   variable matters). Anything else starts cold.
// - Never started while a launch is in progress or a request is in flight, nor within a second
//   of either: a spare's start takes about a CPU-second, and on a small machine it would come
//   out of that load, or out of the first token of the very request the last launch was for
//   (measured: started at the adoption's 'ready', it made the cold request it had served slower
//   than one without a spare).
// - Except for a launch that waits for an eviction (`startForLaunch`): then a spare starts at
//   once, whatever the verdict and however busy, so that its runtime starts while the evicted
//   server exits and its memory comes back (most of a swap's wait on the CPU), and is held for
//   that launch for a while. Its model loads only once adopted, which the launch does after the
//   eviction is over: what overlaps the exit is the runtime the launch would start anyway.
// - A spare that dies is replaced, never adopted (its exit is seen before any launch can take
//   it); one that keeps dying is retried with a growing delay, not in a hot loop.
// - Its stdin is the parent's pipe: if the daemon is killed (kill -9), the spare reads the end
//   of its stdin and exits by itself, before any sweep.
import { randomBytes } from 'node:crypto';
import type { Clock } from '../../common/clock.js';
import type { EngineCommand } from './engine-command.js';
import { commandLineHash, type EngineRegistry } from './engine-registry.js';
import { signalTree, terminateTree, treeResidentBytes } from './process-tree.js';
import { ServerProcess, type LaunchParts, type SpawnFunction } from './server-process.js';
import { errorMessage } from '../../contracts/error-message.js';

/** engines.json's name for a spare not yet adopted (never a model id: ids have no spaces). */
export const SPARE_RECORD_ID = '(warm spare)';

/** What the supervisor shows of its spare. */
export interface SpareStatus {
  pid: number;
  /** 'starting': its runtime is still starting (a launch may adopt it already); 'ready': waiting. */
  phase: 'starting' | 'ready';
  startedAt: number;
  /** Its process tree's RSS, measured once it was ready; null before. */
  residentBytes: number | null;
}

/** A spare handed to a launch: the very server it was, now the launch's and 'loading'. */
export interface AdoptedSpare {
  server: ServerProcess;
  /** How long it has run, ms (monotonic), for the model's log. */
  ageMs: number;
}

export interface WarmSpareDeps {
  spawn: SpawnFunction;
  /** The embedded engine's program; a rejection (not built) means no spare, said once. */
  command(): Promise<EngineCommand>;
  /** The spare's environment on top of the daemon's: the engines' common one (e.g. ELECTRON_RUN_AS_NODE). */
  env: Record<string, string>;
  /** Its working directory, the data dir, as every engine's (see launch.ts). */
  cwd: string;
  registry: EngineRegistry;
  /** The supervisor's data dir: named on the spare's command line, so `ps` says whose spare it is. */
  owner: string;
  clock: Clock;
  platform: NodeJS.Platform;
  graceMs: number;
  /** True while a launch is in progress or a request is in flight: no spare is started then. */
  busy(): boolean;
  /** The spare started, became ready, was adopted or ended: the memory picture changed. */
  changed(): void;
  /** Lines about the spare for the daemon's log (never blocks). */
  note(line: string): void;
  /** How long a spare started for a launch is held for it (LAUNCH_HOLD_MS). */
  launchHoldMs?: number;
}

/** The spare the policy holds: its process, and what the policy needs to know of it. */
interface Spare {
  server: ServerProcess;
  command: EngineCommand;
  /** The clock's elapsed() at its start: its age. */
  startedElapsed: number;
  residentBytes: number | null;
  /** A launch took it: its life is that launch's owner's from then on, its exit too. */
  adopted: boolean;
}

/** How long our own work must have been over before a spare starts (see the rules above). */
const QUIET_MS = 1_000;
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;
const READY_LINE = /^spare: runtime ready\b/;
/**
 * How long a spare started for a launch is kept for it, verdict or not: longer than an
 * eviction's SIGTERM grace and memory wait, after which the launch adopts it or ends it. A hold
 * that lapses unused (the eviction found its server claimed) leaves the spare to the verdict.
 */
const LAUNCH_HOLD_MS = 15_000;

export class WarmSpare {
  private spare: Spare | null = null;
  private wanted = false;
  private closed = false;
  private starting = false;
  /** Spares that died on their own in a row, before one became ready. */
  private deaths = 0;
  private retryAt = 0;
  /** The exits of spares being ended (see close()). */
  private readonly ending = new Set<Promise<unknown>>();
  /** Before this, our own work was too recent for a spare to start. */
  private quietAt = 0;
  private retryTimer: unknown = null;
  private unavailable: string | null = null;
  /** Until this, the spare (started or to start) is a launch's (`startForLaunch`): kept whatever the verdict. */
  private heldUntil = 0;
  private holdTimer: unknown = null;

  constructor(private readonly deps: WarmSpareDeps) {}

  /**
   * Whether a spare should be kept (the controller's verdict from its pass: enabled, on the CPU, room for it).
   * Level-triggered and idempotent: true starts one when none runs and our own work has been
   * quiet for a second (see the rules above); false ends the one there is. Never blocks.
   */
  want(wanted: boolean): void {
    this.wanted = wanted;
    this.reconcile();
  }

  /**
   * Our own work just ended (a launch settled, the last request on a server finished): a spare
   * may start once a quiet second has passed. Never blocks.
   */
  workEnded(): void {
    this.quietAt = this.deps.clock.elapsed() + QUIET_MS;
    this.reconcile();
  }

  /**
   * A launch of `command` with its spec's `env` and the engine argv `args` will follow once an
   * eviction has made room: starts a spare now, when none runs and one could run that launch,
   * and holds it for the launch (see the rules above). Not after a spare kept dying, until its
   * retry. True when a spare is held for the launch now (started or starting). Never blocks.
   */
  startForLaunch(command: EngineCommand, env: Record<string, string>, args: readonly string[]): boolean {
    if (this.closed || this.deps.clock.elapsed() < this.retryAt || !this.couldRun(env, args)) return false;
    const holdMs = this.deps.launchHoldMs ?? LAUNCH_HOLD_MS;
    this.heldUntil = this.deps.clock.elapsed() + holdMs;
    if (this.holdTimer !== null) this.deps.clock.clearTimeout(this.holdTimer);
    this.holdTimer = this.deps.clock.setTimeout(() => {
      this.holdTimer = null;
      // The latest hold's timer (a new hold re-arms it): that hold has lapsed, whatever the clock
      // reads: a timer may fire a moment before the monotonic deadline, and none would follow.
      this.heldUntil = 0;
      this.reconcile();
    }, holdMs);
    if (this.spare === null && !this.starting) void this.start(command);
    return true;
  }

  /** Conditions changed: start a spare if one is wanted, none runs and it is quiet. Never blocks. */
  reconcile(): void {
    if (this.closed) return;
    if (this.held()) return;
    if (!this.wanted) {
      if (this.spare !== null) void this.end(this.spare);
      return;
    }
    if (this.spare !== null || this.starting || this.deps.busy()) return;
    const wait = Math.max(this.retryAt, this.quietAt) - this.deps.clock.elapsed();
    if (wait > 0) {
      this.retryTimer ??= this.deps.clock.setTimeout(() => {
        this.retryTimer = null;
        this.reconcile();
      }, wait);
      return;
    }
    void this.start();
  }

  /**
   * Hands the spare to a launch of `command` with its spec's `env` and the engine argv `args`, or returns
   * null when there is none still a spare (not dying, not being ended) or it cannot run that
   * launch (see the rules above). On success the spare has been sent the argv and is that launch's
   * server, 'loading' with the launch's `parts`: the same ServerProcess, its earlier lines in its
   * tail, its exit the launch's owner's from here on. Synchronous, so two launches cannot take
   * the same spare.
   */
  adopt(command: EngineCommand, env: Record<string, string>, args: readonly string[], parts: LaunchParts): AdoptedSpare | null {
    // A launch came: whatever a hold was for is spent, adopted or not.
    this.heldUntil = 0;
    const spare = this.spare;
    // By its state, not its child: a spare whose exit has been seen is 'draining', one being ended 'stopping'.
    if (spare === null || spare.server.state.kind !== 'spare') return null;
    if (!sameCommand(spare.command, command) || !this.couldRun(env, args)) return null;
    const stdin = spare.server.child.stdin;
    if (stdin === null || !stdin.writable) return null;
    spare.adopted = true;
    this.spare = null;
    spare.server.adopt(parts);
    stdin.end(`${JSON.stringify(args)}\n`);
    this.deps.changed();
    return { server: spare.server, ageMs: this.deps.clock.elapsed() - spare.startedElapsed };
  }

  /**
   * Ends the spare, if there is one, and resolves once it has exited: for a launch that did not
   * adopt it, whose memory the plan counted as free. Never rejects.
   */
  async endNow(): Promise<void> {
    if (this.spare !== null) await this.end(this.spare);
  }

  status(): SpareStatus | null {
    const spare = this.spare;
    if (spare === null) return null;
    const state = spare.server.state;
    return { pid: spare.server.pid, phase: state.kind === 'spare' && state.runtimeReady ? 'ready' : 'starting', startedAt: spare.server.startedAt, residentBytes: spare.residentBytes };
  }

  /** The spare's pid, while one runs: its memory is ours, not another program's. */
  pid(): number | null {
    return this.spare?.server.pid ?? null;
  }

  /** SIGKILLs the spare at once: for the daemon's exit hook, which cannot wait. */
  killNow(): void {
    if (this.spare !== null) signalTree(this.spare.server.pid, [], 'SIGKILL');
  }

  /** Ends the spare for good and waits for its exit. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer !== null) this.deps.clock.clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.holdTimer !== null) this.deps.clock.clearTimeout(this.holdTimer);
    this.holdTimer = null;
    this.heldUntil = 0;
    await this.endNow();
    // One ended before may still be exiting; its exit writes engines.json in the data dir.
    await Promise.all(this.ending);
  }

  /** Whether a spare (of the launch's program) can run a launch with its spec's `env` and argv `args` (see the rules above). */
  private couldRun(env: Record<string, string>, args: readonly string[]): boolean {
    return sameEnv(this.deps.env, env) && cpuOnlyArgv(args);
  }

  private held(): boolean {
    return this.heldUntil > this.deps.clock.elapsed();
  }

  /** Starts a spare; `forLaunch`: the command of the launch it is held for, which it must be able to run. */
  private async start(forLaunch?: EngineCommand): Promise<void> {
    this.starting = true;
    let command: EngineCommand;
    try {
      command = await this.deps.command();
    } catch (error) {
      this.starting = false;
      const why = errorMessage(error);
      if (this.unavailable !== why) this.deps.note(`no warm spare: ${why}`);
      this.unavailable = why;
      return;
    }
    this.starting = false;
    this.unavailable = null;
    // Looked at again after the await: the verdict may have changed, or a launch begun (which spends a hold).
    if (this.closed || this.spare !== null) return;
    if (this.held() ? forLaunch !== undefined && !sameCommand(command, forLaunch) : !this.wanted || this.deps.busy()) return;
    // The owner says whose it is (to a person reading `ps`, too); a random id makes the command
    // line this spare's own, so engines.json can never match another process, not even a later
    // spare of the same data dir that got a reused pid.
    const args = [...command.args, '--spare', '--spare-of', this.deps.owner, '--spare-id', randomBytes(8).toString('hex')];
    let spare: Spare | null = null;
    let server: ServerProcess;
    try {
      server = ServerProcess.startSpare({
        spawn: this.deps.spawn, command: command.command, args, env: this.deps.env, cwd: this.deps.cwd, platform: this.deps.platform,
        startedAt: this.deps.clock.now(),
        onLine: (line) => {
          if (spare !== null) this.heard(spare, line);
        },
      });
    } catch (error) {
      this.died(`could not start: ${errorMessage(error)}`);
      return;
    }
    const held: Spare = { server, command, startedElapsed: this.deps.clock.elapsed(), residentBytes: null, adopted: false };
    spare = held;
    // Its start failing is its end (`ended`), said there.
    server.spawned.catch(() => undefined);
    void server.ended.then(() => this.gone(held));
    void server.exited.then((exit) => {
      // Its own end, never a model's: no failure to classify, nothing reported beyond the note.
      if (!held.adopted) server.markExited(null, false);
    });
    if (server.pid === -1) return;
    this.spare = held;
    this.deps.changed();
    await this.deps.registry
      .add({ modelId: SPARE_RECORD_ID, pid: server.pid, commandHash: commandLineHash(server.commandLine), startedAt: server.startedAt })
      .catch((error: Error) => this.deps.note(`could not record the warm spare (pid ${server.pid}) in engines.json (${error.message}); an orphan of it would not be found`));
  }

  /** A line of a spare's: the one that says its runtime is ready makes it one to count and show. */
  private heard(spare: Spare, line: string): void {
    const server = spare.server;
    if (!READY_LINE.test(line) || !server.markRuntimeReady()) return;
    this.deaths = 0;
    void treeResidentBytes(server.pid, this.deps.platform).then(
      (bytes) => {
        if (server.state.kind === 'spare' && bytes > 0) {
          spare.residentBytes = bytes;
          this.deps.changed();
        }
      },
      () => undefined,
    );
    this.deps.changed();
  }

  /** A spare's process exited (or never started). Unless a launch adopted it: then it is that launch's. */
  private gone(spare: Spare): void {
    if (spare.adopted) return;
    const { server } = spare;
    if (this.spare === spare) this.spare = null;
    void this.deps.registry.remove(server.pid).catch(() => undefined);
    const state = server.state;
    // Not ended by us (that would have marked it 'stopping' first): it died on its own.
    if (state.kind === 'draining' && state.was === 'spare') {
      this.died(`ended on its own (${state.exit.signal ?? `exit code ${state.exit.exitCode}`}): ${server.tail.toArray().slice(-3).join(' / ')}`);
    }
    this.deps.changed();
    this.reconcile();
  }

  private async end(spare: Spare): Promise<void> {
    const { server } = spare;
    this.ending.add(server.ended);
    void server.ended.then(() => this.ending.delete(server.ended));
    if (server.state.kind === 'spare') {
      server.markStopping({ why: 'requested' });
      if (this.spare === spare) this.spare = null;
      this.deps.changed();
      await terminateTree(server.pid, {
        graceMs: this.deps.graceMs,
        leaderExited: server.ended,
        platform: this.deps.platform,
        onKill: () => server.markKilledByUs(),
      });
    }
    await server.ended;
  }

  private died(why: string): void {
    this.deaths++;
    const delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (this.deaths - 1));
    this.retryAt = this.deps.clock.elapsed() + delay;
    this.deps.note(`the warm spare ${why}; another in ${Math.round(delay / 1000)} s`);
  }
}

function sameCommand(a: EngineCommand, b: EngineCommand): boolean {
  return a.command === b.command && a.args.length === b.args.length && a.args.every((arg, i) => arg === b.args[i]);
}

function sameEnv(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

/**
 * Whether an engine argv puts every layer on the CPU (`-ngl 0`, and `-ngld 0` with a draft):
 * read from the argv itself, so it is exactly what the engine would be told. Pure.
 */
export function cpuOnlyArgv(args: readonly string[]): boolean {
  const valueOf = (flags: readonly string[]): string | undefined => {
    let value: string | undefined;
    for (let i = 0; i < args.length; i++) if (flags.includes(args[i] ?? '')) value = args[i + 1];
    return value;
  };
  const hasDraft = valueOf(['-md', '--model-draft']) !== undefined;
  return valueOf(['-ngl', '--n-gpu-layers', '--gpu-layers']) === '0' && (!hasDraft || valueOf(['-ngld', '--n-gpu-layers-draft', '--gpu-layers-draft']) === '0');
}
