// One model server process: spawned, its output cut into lines, its exit observed, its life one
// state with one writer. A warm spare is one too, from its spawn (state 'spare'): the launch that
// adopts it carries on with the same object, so there is one way to spawn, read and end a server.
//
// The supervisor decides; this only reports. It never restarts anything itself.
import type { EngineKind } from '../../contracts/snapshot.js';
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { LineRing, LineSplitter } from './log-ring.js';
import { BufferTally } from './memory/memory-measure.js';
import { Doorbell, EMBEDDED_READY_LINE, READY_LINE } from './readiness.js';
import { ServerClaims } from './server-claims.js';
import type { HangWatch } from './hang/hang-watch.js';
import type { FailureClassification } from '../failure-classifier.js';
import { changeAllowed, IllegalTransition, readyAtOf, type EndedBy, type ProcessExit, type ServerAbilities, type ServerPhase, type ServerState } from './server-state.js';
import type { LaunchLevel } from '../../contracts/launch-level.js';
import type { Placement } from '../../contracts/plan.js';

/** child_process.spawn's shape; injected so tests and other runtimes can pass their own. */
export type SpawnFunction = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

/** Lines kept per process for the failure classifier (the model's own ring keeps more, across launches). */
const TAIL_LINES = 200;
/**
 * How long to wait for the pipes to drain after the exit: node-llama-cpp's last llama.cpp
 * lines — often the cause — arrive after the process has already exited.
 */
const DRAIN_MS = 250;

/**
 * What a launch gives its server: known when the launch spawns one, and only when it adopts one
 * for a warm spare, which was started before any launch chose a port or a key.
 */
export interface LaunchParts {
  port: number;
  apiKey: string;
  level: LaunchLevel;
  /** Where its launch placed it (the plan's GPUs), for naming the card of a fault in its log; none: wherever the engine puts it. */
  placement?: Placement | undefined;
  /** Epoch ms: when the launch started it (or adopted it), shown and recorded. */
  startedAt: number;
  onLine: (line: string) => void;
  /** Its claims went from none to some (true) or back (false). */
  onBusyChange: (busy: boolean) => void;
  /**
   * Each change of its state from now on, once made: where the launch's owner turns them into
   * its reports (model-owner.ts). A spare has no launch, so its own life reports nothing.
   */
  onTransition: (state: ServerState, server: ServerProcess) => void;
}

/** How to spawn one: the program, its argv, environment and working directory. */
interface SpawnParts {
  spawn: SpawnFunction;
  command: string;
  args: readonly string[];
  env: Record<string, string>;
  cwd: string;
  platform: NodeJS.Platform;
}

export class ServerProcess {
  private current: ServerState;
  /** The launch's parts; null while it is a spare. */
  private launch: LaunchParts | null;
  private lineListener: (line: string) => void;
  private started: number;
  /** 0…1 while it loads, where the engine's 503 body says; see loadProgress. */
  private progress: number | null = null;
  /** Hang detection while it has claims; made at its first claim (watchHangs). */
  private watch: HangWatch | null = null;
  /** The embedded engine wrote its own ready line; see provenReady. */
  private proven = false;
  /** The requests it is answering; see server-claims.ts. */
  readonly claims: ServerClaims;
  /** Its lines since its spawn: an adopted spare's own start comes first. */
  readonly tail = new LineRing(TAIL_LINES);
  readonly buffers = new BufferTally();
  readonly doorbell = new Doorbell();
  /** Resolves with the exit once the process has exited and its output has drained. */
  readonly exited: Promise<ProcessExit>;
  /**
   * Resolves as soon as the process has exited (or failed to start), without waiting for the
   * drain: for those who only need to know its port is dead, not why. It is 'draining' by then.
   */
  readonly ended: Promise<void>;
  /** Resolves when the process has started; rejects with the 'error' that comes instead of 'spawn'. */
  readonly spawned: Promise<void>;
  readonly pid: number;
  /** Its argv as /proc shows it, for engines.json: an adopted spare keeps the one it was started with. */
  readonly commandLine: string;

  /** Its process; null for a launch that never ran one (neverRan). */
  private readonly process: ChildProcess | null;
  /** The engine it runs; null for a launch that never ran one, whose spec may not even have been read. */
  private readonly engineKind: EngineKind | null;

  private constructor(
    child: ChildProcess | null,
    commandLine: string,
    engine: EngineKind | null,
    initial: ServerState,
    launch: LaunchParts | null,
    startedAt: number,
    onLine: (line: string) => void,
  ) {
    this.process = child;
    this.engineKind = engine;
    this.current = initial;
    this.launch = launch;
    this.started = startedAt;
    this.lineListener = onLine;
    this.pid = child?.pid ?? -1;
    this.commandLine = commandLine;
    this.claims = new ServerClaims((busy) => this.launch?.onBusyChange(busy));
    if (child === null) {
      const never = Promise.reject(new Error(NO_PROCESS));
      never.catch(() => undefined);
      this.spawned = never;
      this.ended = Promise.resolve();
      this.exited = Promise.resolve(NO_EXIT);
      return;
    }
    const handleLine = (line: string): void => {
      this.tail.push(line);
      this.buffers.add(line);
      if (engine === 'embedded' && EMBEDDED_READY_LINE.test(line)) this.proven = true;
      if (READY_LINE.test(line)) this.doorbell.ring();
      this.lineListener(line);
    };
    for (const stream of [child.stdout, child.stderr]) {
      if (stream === null) continue;
      const splitter = new LineSplitter(handleLine);
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => splitter.write(chunk));
      stream.on('end', () => splitter.end());
    }
    // A spare's stdin is where its launch's argv goes: EPIPE on one that died just before its
    // adoption is said by its exit, and must not be thrown.
    child.stdin?.on('error', () => {});
    let started = false;
    this.spawned = new Promise((resolve, reject) => {
      child.once('spawn', () => {
        started = true;
        resolve();
      });
      // Listened to for the whole life of the child: an 'error' without a listener (a failed
      // kill, say) would be thrown and take the daemon down.
      child.on('error', (error) => {
        if (started) this.lineListener(`── llmtray: process error: ${error.message}`);
        else reject(error);
      });
    });
    let markEnded = (_exit: ProcessExit): void => {};
    this.ended = new Promise((resolve) => {
      markEnded = (exit) => {
        this.drain(exit);
        resolve();
      };
    });
    this.exited = new Promise((resolve) => {
      const settle = (code: number | null, signal: NodeJS.Signals | null): void => {
        // Marked at once, not after the drain: a dying engine's sockets close before its exit
        // arrives, and for the drain's 250 ms the router must already stop sending it requests.
        const exit = { exitCode: code, signal };
        markEnded(exit);
        const drained = new Promise<void>((done) => {
          const timer = setTimeout(done, DRAIN_MS);
          child.once('close', () => {
            clearTimeout(timer);
            done();
          });
        });
        void drained.then(() => resolve(exit));
      };
      child.once('exit', settle);
      // A process that never started has no exit event; its 'error' is its end.
      this.spawned.catch(() => {
        const exit = NO_EXIT;
        markEnded(exit);
        resolve(exit);
      });
    });
  }

  /**
   * Spawns a launch's server. Throws what spawn throws synchronously (bad arguments); a command
   * that cannot be started rejects `spawned` instead. Spawned detached on POSIX so that it leads
   * its own process group and the supervisor can end its whole tree with one signal.
   */
  static start(options: LaunchParts & SpawnParts & { engine: EngineKind }): ServerProcess {
    const child = spawnChild(options, 'ignore');
    return new ServerProcess(child, commandLineOf(options), options.engine, { kind: 'loading' }, options, options.startedAt, options.onLine);
  }

  /**
   * A launch that failed before any process ran (its spec could not be read, its argv or key file
   * not made): its whole life at once, loading → draining → exited with `failure`, so that its one
   * report (ServerExited, no pid) comes out of a transition like every other. It has no child,
   * engine, port or key: whoever asks it for one is a bug.
   */
  static neverRan(parts: Pick<LaunchParts, 'level' | 'placement' | 'startedAt' | 'onLine' | 'onTransition'>, failure: FailureClassification): ServerProcess {
    const launch: LaunchParts = { ...parts, port: 0, apiKey: '', onBusyChange: () => {} };
    const server = new ServerProcess(null, '', null, { kind: 'loading' }, launch, parts.startedAt, parts.onLine);
    server.drain(NO_EXIT);
    server.markExited(failure, false);
    return server;
  }

  /**
   * Spawns a warm spare (warm-spare.ts): the embedded engine with no launch yet, in state
   * 'spare', its stdin a pipe for the argv of the launch that adopts it. Throws and rejects as
   * `start` does; `spawned` must be listened to.
   */
  static startSpare(options: SpawnParts & { startedAt: number; onLine: (line: string) => void }): ServerProcess {
    const child = spawnChild(options, 'pipe');
    return new ServerProcess(child, commandLineOf(options), 'embedded', { kind: 'spare', runtimeReady: false }, null, options.startedAt, options.onLine);
  }

  /**
   * A launch takes this spare as its server: its port, key and level are the launch's from now
   * on, its lines go to the launch, and it is 'loading'. Throws IllegalTransition unless it is
   * still a spare (one that is being ended, or has died, is never adopted). The caller sends it
   * the launch's argv.
   */
  adopt(parts: LaunchParts): void {
    this.transition({ kind: 'loading' });
    this.launch = parts;
    this.started = parts.startedAt;
    this.lineListener = parts.onLine;
  }

  /** The launch's parts; a spare has none yet, and whoever asks one for them is a bug. */
  private parts(): LaunchParts {
    if (this.launch === null) throw new Error(`pid ${this.pid} is a warm spare: it has no port, key or level until a launch adopts it`);
    return this.launch;
  }

  get port(): number {
    if (this.process === null) throw new Error(NO_PROCESS);
    return this.parts().port;
  }

  get apiKey(): string {
    if (this.process === null) throw new Error(NO_PROCESS);
    return this.parts().apiKey;
  }

  get engine(): EngineKind {
    if (this.engineKind === null) throw new Error(NO_PROCESS);
    return this.engineKind;
  }

  get level(): LaunchLevel {
    return this.parts().level;
  }

  /** Epoch ms: the launch's start (or adoption); a spare's own spawn until then. */
  get startedAt(): number {
    return this.started;
  }
  get state(): ServerState {
    return this.current;
  }

  /** Its child process; a launch that never ran one has none, and whoever asks it for one is a bug. */
  get child(): ChildProcess {
    if (this.process === null) throw new Error(NO_PROCESS);
    return this.process;
  }

  /** A process was started (not one whose command could not be spawned, nor a launch that never got that far). */
  get ran(): boolean {
    return this.pid !== -1;
  }

  /** Where its launch placed it; a spare is placed nowhere yet. */
  get placement(): Placement | undefined {
    return this.launch?.placement;
  }

  /** What it can do while it is ready; null otherwise (no request may be sent then). */
  get serves(): ServerAbilities | null {
    return this.current.kind === 'ready' ? this.current.serves : null;
  }

  /** Its load fraction while it loads (0…1, or null where the engine's 503 body carries none); null once it is no longer loading. */
  get loadProgress(): number | null {
    return this.phase === 'loading' ? this.progress : null;
  }

  /** The embedded engine wrote its own ready line, which it writes only once it serves (readiness.ts). */
  get provenReady(): boolean {
    return this.proven;
  }

  // The life's named steps: the supervisor's files ask for a change by its name; only these
  // write the state, through transition().

  /** Its process has started for the launch (an adopted spare's, once the launch has it): ServerSpawned. */
  markSpawned(at: number): void {
    this.transition({ kind: 'loading', spawnedAt: at });
  }

  /** It answers /health, and `serves` says what it can do: requests may come from now on. */
  markReady(at: number, serves: ServerAbilities): void {
    this.transition({ kind: 'ready', at, serves });
  }

  /**
   * The supervisor is ending it for `by`: a spare, loading or ready server is marked stopping
   * (from then on it takes no claims); one already stopping keeps the reason it was first
   * stopped for, and one already gone is not marked. True when it was marked now.
   */
  markStopping(by: EndedBy): boolean {
    const state = this.current;
    if (state.kind !== 'spare' && state.kind !== 'loading' && state.kind !== 'ready') return false;
    this.transition({ kind: 'stopping', by, readyAt: readyAtOf(state), killedByUs: false });
    return true;
  }

  /** The supervisor sent it SIGKILL itself (a stop past its grace): a SIGKILL from elsewhere is read as its own end. */
  markKilledByUs(): void {
    const state = this.current;
    if (state.kind === 'stopping' || state.kind === 'draining') this.transition({ ...state, killedByUs: true });
  }

  /** A spare said its runtime has started. False unless it is a spare whose runtime was not ready yet. */
  markRuntimeReady(): boolean {
    const state = this.current;
    if (state.kind !== 'spare' || state.runtimeReady) return false;
    this.transition({ kind: 'spare', runtimeReady: true });
    return true;
  }

  /**
   * Drained and read: `failure` says how it failed (null after a stop, and for a spare's own
   * end); `portTaken`, that another program had taken its port while it loaded. Throws
   * IllegalTransition unless it is draining.
   */
  markExited(failure: FailureClassification | null, portTaken: boolean): void {
    const state = this.current;
    if (state.kind !== 'draining') throw new IllegalTransition(state.kind, 'exited');
    this.transition({ kind: 'exited', exit: state.exit, readyAt: state.readyAt, failure, portTaken });
  }

  /** A loading server's fraction, as readiness read it. True when it changed. */
  noteLoadProgress(fraction: number | null): boolean {
    if (fraction === this.progress) return false;
    this.progress = fraction;
    return true;
  }

  /** Hang detection while requests are in flight: made by `make` at the first, then started again. */
  watchHangs(make: () => HangWatch): void {
    this.watch ??= make();
    this.watch.start();
  }

  /** No request in flight: hang detection waits for the next. */
  pauseHangWatch(): void {
    this.watch?.stop();
  }

  /** It is being ended: hang detection ends for good. */
  closeHangWatch(): void {
    this.watch?.close();
  }

  /**
   * Writes the server's state: only this file's named steps call it (and the unit test, which
   * pins the table with it). Throws IllegalTransition for a change its life does not have
   * (server-state.ts), leaving the state as it was: a throw is a bug found, never an engine's doing. The
   * launch's `onTransition` hears the new state once it is set.
   */
  transition(next: ServerState): void {
    if (!changeAllowed(this.current, next)) throw new IllegalTransition(this.current.kind, next.kind);
    this.current = next;
    this.launch?.onTransition(next, this);
  }

  /** Ready and alive: the one test for "requests may be sent here". */
  serving(): boolean {
    return this.current.kind === 'ready';
  }

  /** Its process has exited (or never started), whether or not its output has drained yet. */
  get gone(): boolean {
    return this.current.kind === 'draining' || this.current.kind === 'exited';
  }

  /** Not yet drained and classified: spare, loading, ready, stopping or draining. */
  get running(): boolean {
    return this.current.kind !== 'exited';
  }

  /** What status() calls it: a draining server is still what it was until its output is read. */
  get phase(): ServerPhase {
    return this.current.kind === 'draining' ? this.current.was : this.current.kind;
  }

  /** The process exited (or never started): its port is dead from now on. */
  private drain(exit: ProcessExit): void {
    const state = this.current;
    if (state.kind === 'draining' || state.kind === 'exited') return;
    const stopping = state.kind === 'stopping' ? state : null;
    this.transition({ kind: 'draining', exit, was: state.kind, by: stopping?.by ?? null, readyAt: readyAtOf(state), killedByUs: stopping?.killedByUs ?? false });
  }
}

/** What a launch that never ran a process answers whoever asks it for its process's parts: a bug. */
const NO_PROCESS = 'no process was started for this launch: it has no child, engine, port or key';

/** The exit of a process that never started: no code, no signal. */
const NO_EXIT: ProcessExit = Object.freeze({ exitCode: null, signal: null });

function commandLineOf(parts: SpawnParts): string {
  return [parts.command, ...parts.args].join(' ');
}

function spawnChild(options: SpawnParts, stdin: 'pipe' | 'ignore'): ChildProcess {
  return options.spawn(options.command, options.args, {
    detached: options.platform !== 'win32',
    stdio: [stdin, 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
    cwd: options.cwd,
    windowsHide: true,
  });
}
