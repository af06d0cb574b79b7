// One model server process: spawned, its output cut into lines, its exit observed.
//
// The supervisor decides; this only reports. It never restarts anything itself.
import type { EngineKind } from '../../contracts/snapshot.js';
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { LineRing, LineSplitter } from './log-ring.js';
import { BufferTally } from './memory-measure.js';
import { Doorbell, EMBEDDED_READY_LINE, READY_LINE } from './readiness.js';
import { ServerClaims } from './server-claims.js';
import type { HangWatch } from './hang-watch.js';
import type { FailureClassification } from '../failure-classifier.js';
import type { LaunchLevel } from '../../contracts/launch-level.js';
import type { LlamaServerSlots } from '../llama-server/saved-slots.js';

/** child_process.spawn's shape; injected so tests and other runtimes can pass their own. */
export type SpawnFunction = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

export type ServerPhase = 'loading' | 'ready' | 'stopping' | 'exited';

/**
 * Why the supervisor ended a server: 'requested' (an eviction, a cancelled load, a relaunch,
 * quit) makes its exit a stop, not a failure; 'load-timeout' and 'hung' make it a hang.
 */
export type EndedBy = { why: 'requested' } | { why: 'load-timeout' } | { why: 'hung'; reason: string };

export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
}

/**
 * A server's whole life as one value; `ServerProcess.transition` is its only writer.
 *
 * - loading: started, not yet answering /health.
 * - ready: serving since `at` (epoch ms).
 * - stopping: the supervisor is ending it for `by`, marked before it signals the process, so
 *   that from then on it takes no claims. `killedByUs`: the supervisor sent it SIGKILL itself
 *   (a stop past its grace); any other SIGKILL came from elsewhere.
 * - draining: the process has exited (or never started), its output still draining: its port is
 *   dead, so nothing may be sent there any more. `by` is null when it ended on its own.
 * - exited: drained and classified: `failure` says how it failed, null after a stop; `portTaken`:
 *   it ended while loading because another program had taken its port (a retry, not a failure).
 *
 * `readyAt` rides along after 'ready': whether it had been ready decides how its end is read.
 */
export type ServerState =
  | { kind: 'loading' }
  | { kind: 'ready'; at: number }
  | { kind: 'stopping'; by: EndedBy; readyAt: number | null; killedByUs: boolean }
  | { kind: 'draining'; exit: ProcessExit; was: 'loading' | 'ready' | 'stopping'; by: EndedBy | null; readyAt: number | null; killedByUs: boolean }
  | { kind: 'exited'; exit: ProcessExit; readyAt: number | null; failure: FailureClassification | null; portTaken: boolean };

/**
 * Which state may follow which. A stopping or draining server may be rewritten in place (the
 * supervisor's SIGKILL is learned while it stops, or while its output drains); nothing follows
 * 'exited'.
 */
const NEXT: Readonly<Record<ServerState['kind'], readonly ServerState['kind'][]>> = {
  loading: ['ready', 'stopping', 'draining'],
  ready: ['stopping', 'draining'],
  stopping: ['stopping', 'draining'],
  draining: ['draining', 'exited'],
  exited: [],
};

/** A writer asked for a change the life of a server does not have: a bug in the supervisor, never the engine's doing. */
export class IllegalTransition extends Error {
  constructor(from: ServerState['kind'], to: ServerState['kind']) {
    super(`a server cannot go from '${from}' to '${to}'`);
    this.name = 'IllegalTransition';
  }
}

/** Why the supervisor is ending (or ended) it, while it stops or drains; null otherwise, or when it ended on its own. */
export function endedByOf(state: ServerState): EndedBy | null {
  return state.kind === 'stopping' || state.kind === 'draining' ? state.by : null;
}

/** When the server became ready, if it ever did. */
export function readyAtOf(state: ServerState): number | null {
  return state.kind === 'loading' ? null : state.kind === 'ready' ? state.at : state.readyAt;
}

/** Lines kept per process for the failure classifier (the model's own ring keeps more, across launches). */
const TAIL_LINES = 200;
/**
 * How long to wait for the pipes to drain after the exit: node-llama-cpp's last llama.cpp
 * lines — often the cause — arrive after the process has already exited.
 */
const DRAIN_MS = 250;

/** What a server process is, however it came to run: spawned for the launch, or an adopted spare. */
interface ServerParts {
  port: number;
  apiKey: string;
  level: LaunchLevel;
  /** Which engine it runs, for what its runtime costs beside the model. */
  engine: EngineKind;
  startedAt: number;
  onLine: (line: string) => void;
  /** Its claims went from none to some (true) or back (false). */
  onBusyChange: (busy: boolean) => void;
}

export class ServerProcess {
  private current: ServerState = { kind: 'loading' };
  loadProgress: number | null = null;
  /** Whether it serves Anthropic's Messages API itself: asked once it answers /health (served-apis.ts), before it is ready. */
  anthropicMessages = false;
  /** Whether it can call tools: false for a llama-server build without Jinja templates (capabilities.jinja 'absent'). */
  toolCalls = true;
  /** A llama-server's saved conversations (llama-server/saved-slots.ts), opened once it answers; null for the embedded engine, which keeps its own. */
  savedSlots: LlamaServerSlots | null = null;
  /** The requests it is answering; see server-claims.ts. */
  readonly claims: ServerClaims;
  /** Hang detection while it has claims; made at its first claim. */
  watch: HangWatch | null = null;
  readonly tail = new LineRing(TAIL_LINES);
  readonly buffers = new BufferTally();
  readonly doorbell = new Doorbell();
  /** The embedded engine wrote its own ready line, which it writes only once it serves (readiness.ts). */
  provenReady = false;
  /** Resolves with the exit once the process has exited and its output has drained. */
  readonly exited: Promise<ProcessExit>;
  /**
   * Resolves as soon as the process has exited (or failed to start), without waiting for the
   * drain: for those who only need to know its port is dead, not why. It is 'draining' by then.
   */
  readonly ended: Promise<void>;
  /** Resolves when the process has started; rejects with the 'error' that comes instead of 'spawn'. */
  readonly spawned: Promise<void>;

  private constructor(
    readonly child: ChildProcess,
    readonly pid: number,
    readonly port: number,
    readonly apiKey: string,
    readonly level: LaunchLevel,
    readonly engine: EngineKind,
    readonly startedAt: number,
    onLine: (line: string) => void,
    onBusyChange: (busy: boolean) => void,
    alreadySpawned: boolean,
  ) {
    this.claims = new ServerClaims(onBusyChange);
    const handleLine = (line: string): void => {
      this.tail.push(line);
      this.buffers.add(line);
      if (engine === 'embedded' && EMBEDDED_READY_LINE.test(line)) this.provenReady = true;
      if (READY_LINE.test(line)) this.doorbell.ring();
      onLine(line);
    };
    for (const stream of [child.stdout, child.stderr]) {
      if (stream === null) continue;
      const splitter = new LineSplitter(handleLine);
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => splitter.write(chunk));
      stream.on('end', () => splitter.end());
    }
    let started = alreadySpawned;
    this.spawned = new Promise((resolve, reject) => {
      if (alreadySpawned) resolve();
      else child.once('spawn', () => {
        started = true;
        resolve();
      });
      // Listened to for the whole life of the child: an 'error' without a listener (a failed
      // kill, say) would be thrown and take the daemon down.
      child.on('error', (error) => {
        if (started) onLine(`── llmtray: process error: ${error.message}`);
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
        const exit = { exitCode: null, signal: null };
        markEnded(exit);
        resolve(exit);
      });
    });
  }

  /**
   * Spawns the server. Throws what spawn throws synchronously (bad arguments); a command that
   * cannot be started rejects `spawned` instead. Spawned detached on POSIX so that it leads its
   * own process group and the supervisor can end its whole tree with one signal.
   */
  static start(options: ServerParts & { spawn: SpawnFunction; command: string; args: readonly string[]; env: Record<string, string>; cwd: string; platform: NodeJS.Platform }): ServerProcess {
    const child = options.spawn(options.command, options.args, {
      detached: options.platform !== 'win32',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
      cwd: options.cwd,
      windowsHide: true,
    });
    return ServerProcess.over(child, options, false);
  }

  /**
   * Takes over a process that is already running (a warm spare being adopted: warm-spare.ts) as
   * this launch's server. The caller has detached its own listeners from the child's output
   * and checked that it has not exited. Synchronous; `spawned` is already resolved. A spare is
   * always the embedded engine; the caller says so in `engine`.
   */
  static adopt(options: ServerParts & { child: ChildProcess }): ServerProcess {
    return ServerProcess.over(options.child, options, true);
  }

  private static over(child: ChildProcess, parts: ServerParts, alreadySpawned: boolean): ServerProcess {
    const { port, apiKey, level, engine, startedAt, onLine, onBusyChange } = parts;
    return new ServerProcess(child, child.pid ?? -1, port, apiKey, level, engine, startedAt, onLine, onBusyChange, alreadySpawned);
  }

  get state(): ServerState {
    return this.current;
  }

  /**
   * The only writer of the server's state. Throws IllegalTransition for a change its life does
   * not have (NEXT), leaving the state as it was: every writer is the supervisor's, in this
   * folder, and the unit tests pin the table, so a throw is a bug found, never an engine's doing.
   */
  transition(next: ServerState): void {
    if (!NEXT[this.current.kind].includes(next.kind)) throw new IllegalTransition(this.current.kind, next.kind);
    this.current = next;
  }

  /** Ready and alive: the one test for "requests may be sent here". */
  serving(): boolean {
    return this.current.kind === 'ready';
  }

  /** Its process has exited (or never started), whether or not its output has drained yet. */
  get gone(): boolean {
    return this.current.kind === 'draining' || this.current.kind === 'exited';
  }

  /** Not yet drained and classified: loading, ready, stopping or draining. */
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
