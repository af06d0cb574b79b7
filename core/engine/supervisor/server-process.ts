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

/** child_process.spawn's shape; injected so tests and other runtimes can pass their own. */
export type SpawnFunction = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

export type ServerPhase = 'loading' | 'ready' | 'stopping' | 'exited';

/** Why the supervisor ended a server; see ServerProcess.endedBy. */
export type EndedBy = { why: 'requested' } | { why: 'load-timeout' } | { why: 'hung'; reason: string };

export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
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
  phase: ServerPhase = 'loading';
  readyAt: number | null = null;
  loadProgress: number | null = null;
  /** Whether it serves Anthropic's Messages API itself: asked once it answers /health (served-apis.ts), before it is ready. */
  anthropicMessages = false;
  /** Whether it can call tools: false for a llama-server build without Jinja templates (capabilities.jinja 'absent'). */
  toolCalls = true;
  /**
   * Why the supervisor ended it, set before it signals the process: 'requested' (an eviction,
   * a cancelled load, a relaunch, quit) makes its exit a stop, not a failure; 'load-timeout'
   * and 'hung' make it a hang. Null: it ended on its own.
   */
  endedBy: EndedBy | null = null;
  /** The supervisor sent it SIGKILL itself (a stop past its grace); any other SIGKILL came from elsewhere. */
  killedByUs = false;
  /** The requests it is answering; see server-claims.ts. */
  readonly claims: ServerClaims;
  /** Hang detection while it has claims; made at its first claim. */
  watch: HangWatch | null = null;
  /** How it failed, once its exit has been classified; null while running or after a stop. */
  failure: FailureClassification | null = null;
  /** It ended while loading because another program had taken its port: not a failure, a retry. */
  portTaken = false;
  exit: ProcessExit | null = null;
  /**
   * True from the moment the process is known to have exited (or never started), before its
   * output has drained: its port is dead, so nothing may be sent there any more, even while
   * `phase` still says 'ready' for the drain's sake.
   */
  hasEnded = false;
  readonly tail = new LineRing(TAIL_LINES);
  readonly buffers = new BufferTally();
  readonly doorbell = new Doorbell();
  /** The embedded engine wrote its own ready line, which it writes only once it serves (readiness.ts). */
  provenReady = false;
  /** Resolves with the exit once the process has exited and its output has drained. */
  readonly exited: Promise<ProcessExit>;
  /**
   * Resolves as soon as the process has exited (or failed to start), without waiting for the
   * drain: for those who only need to know its port is dead, not why. `hasEnded` is set first.
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
    let markEnded = (): void => {};
    this.ended = new Promise((resolve) => {
      markEnded = () => {
        this.hasEnded = true;
        resolve();
      };
    });
    this.exited = new Promise((resolve) => {
      const settle = (code: number | null, signal: NodeJS.Signals | null): void => {
        // Marked at once, not after the drain: a dying engine's sockets close before its exit
        // arrives, and for the drain's 250 ms the router must already stop sending it requests.
        markEnded();
        const exit = { exitCode: code, signal };
        const drained = new Promise<void>((done) => {
          const timer = setTimeout(done, DRAIN_MS);
          child.once('close', () => {
            clearTimeout(timer);
            done();
          });
        });
        void drained.then(() => {
          this.exit = exit;
          this.phase = 'exited';
          resolve(exit);
        });
      };
      child.once('exit', settle);
      // A process that never started has no exit event; its 'error' is its end.
      this.spawned.catch(() => {
        markEnded();
        this.exit = { exitCode: null, signal: null };
        this.phase = 'exited';
        resolve(this.exit);
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

  get running(): boolean {
    return this.phase !== 'exited';
  }
}
