// An embedded engine started by the benchmark itself, without the supervisor: the reference
// that the supervisor, the daemon and the router are measured against.
//
// The argv comes from the same argvFor the supervisor uses, so "the same engine command" is
// true by construction, not by copying flags. Every line the engine prints is kept with the
// moment it arrived (performance.now()), which is the earliest any parent process can know
// what the engine says.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import diagnosticsChannel from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { argvFor, type LaunchSpec } from '../../core/engine/launch-spec.js';
import { apiKeyDir, newApiKeyFilePath, removeApiKeyFile, writeApiKeyFile } from '../../core/engine/supervisor/api-key-file.js';
import { defaultEngineCommand } from '../../core/engine/supervisor/engine-command.js';
import { freeLoopbackPort } from '../../core/engine/supervisor/free-port.js';
import { LineSplitter } from '../../core/engine/supervisor/log-ring.js';
import { checkHealth } from '../../core/engine/supervisor/readiness.js';
import { benchDir } from './bench-models.js';
import type { LaunchLevel } from '../../core/contracts/launch-level.js';

export interface TimedLine {
  at: number;
  text: string;
}

/**
 * Cuts a child's stdout and stderr into lines stamped with their arrival time. Attached before
 * anyone else listens, so the stamp is never later than what another listener sees.
 */
export function recordLines(child: ChildProcess, onLine: (line: TimedLine) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    if (stream === null) continue;
    const splitter = new LineSplitter((text) => onLine({ at: performance.now(), text }));
    stream.on('data', (chunk: string | Buffer) => splitter.write(typeof chunk === 'string' ? chunk : chunk.toString('utf8')));
    stream.on('end', () => splitter.end());
  }
}

/** The line that says the engine has loaded its model; the embedded engine prints it right after /health turns 200. */
export function isModelLoadedLine(text: string): boolean {
  return /\bmodel loaded\b/.test(text);
}

/**
 * Calls `onSpawn` for every child process this process starts from now on — including those
 * started by code that takes no spawn function (the daemon's supervisor) — once it has
 * started, with the moment just before it was spawned. Node's documented `child_process`
 * diagnostics channel, so it observes without replacing anything. The call comes from the
 * child's 'spawn' event, which Node emits before any of its output can be read, so a listener
 * attached then misses nothing. Returns the unsubscribe.
 */
export function observeSpawns(onSpawn: (child: ChildProcess, at: number) => void): () => void {
  const listener = (message: unknown): void => {
    const at = performance.now();
    const child = (message as { process: ChildProcess }).process;
    child.once('spawn', () => onSpawn(child, at));
  };
  diagnosticsChannel.subscribe('child_process', listener);
  return () => diagnosticsChannel.unsubscribe('child_process', listener);
}

/** When a started child prints its "model loaded" line; rejects if it exits first. Call it from 'spawn' at the latest. */
export function readyLineOf(child: ChildProcess): Promise<number> {
  const ready = new Promise<number>((resolve, reject) => {
    recordLines(child, (line) => {
      if (isModelLoadedLine(line.text)) resolve(line.at);
    });
    child.once('exit', (code, signal) => reject(new Error(`the engine exited (${signal ?? `code ${code}`}) before it printed "model loaded"`)));
  });
  ready.catch(() => undefined);
  return ready;
}

export interface DirectEngine {
  pid: number;
  port: number;
  apiKey: string;
  /** performance.now() just before spawn. */
  spawnedAt: number;
  lines: TimedLine[];
  /** When the engine's "model loaded" line arrived; rejects if it exits first. */
  readyLine: Promise<number>;
  /** Resolves when the process has exited. */
  exited: Promise<void>;
  /** SIGTERM, then waits for the exit. Idempotent. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
// A benchmark that throws must not leave engines running on a shared machine.
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/**
 * Spawns the engine for `spec` at `level` on a free loopback port, its key in a 0600 file as
 * the supervisor passes it: the embedded engine, or for a llama-server spec the binary at
 * `llamaServerPath`, with the command and argv the supervisor would use. Resolves once it has started.
 */
export async function startDirectEngine(
  spec: LaunchSpec,
  level: LaunchLevel = 'full',
  llamaServerPath: string | null = null,
  /** Another checkout's built embedded engine (a node-llama-cpp built another way); this checkout's by default. */
  embeddedEntry?: string,
): Promise<DirectEngine> {
  const port = await freeLoopbackPort();
  const apiKey = randomBytes(24).toString('hex');
  const keyFile = newApiKeyFilePath(apiKeyDir(await benchDir()));
  await writeApiKeyFile(keyFile, apiKey);
  const engine = await defaultEngineCommand(embeddedEntry === undefined ? { llamaServerPath } : { llamaServerPath, embeddedEntry })(spec);
  const args = [...engine.args, ...argvFor(spec, level, engine.capabilities, port, { keyFile })];
  const lines: TimedLine[] = [];
  let onReady: (at: number) => void = () => {};
  let onGone: (error: Error) => void = () => {};
  const readyLine = new Promise<number>((resolve, reject) => {
    onReady = resolve;
    onGone = reject;
  });
  readyLine.catch(() => undefined);
  const spawnedAt = performance.now();
  const child = spawn(engine.command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...spec.env } });
  live.add(child);
  recordLines(child, (line) => {
    lines.push(line);
    if (isModelLoadedLine(line.text)) onReady(line.at);
  });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      removeApiKeyFile(keyFile);
      onGone(new Error(`the engine for ${spec.modelPath} exited (${signal ?? `code ${code}`}) before it was ready:\n${lines.slice(-15).map((l) => l.text).join('\n')}`));
      resolve();
    });
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  let stopping: Promise<void> | null = null;
  return {
    pid: child.pid ?? -1,
    port,
    apiKey,
    spawnedAt,
    lines,
    readyLine,
    exited,
    stop: () => {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      })();
      return stopping;
    },
  };
}

/**
 * Polls GET /health with the supervisor's own checkHealth, back to back with `intervalMs`
 * between answers, and resolves with the moment the first 200 came. Rejects if the engine exits.
 */
export async function pollUntilHealthy(engine: DirectEngine, intervalMs: number): Promise<number> {
  let gone: Error | null = null;
  engine.readyLine.catch((error: Error) => {
    gone = error;
  });
  for (;;) {
    if (gone !== null) throw gone;
    const health = await checkHealth(engine.port, engine.apiKey);
    if (health.kind === 'ready') return performance.now();
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A launch spec for a model file, as the daemon would make it for a CPU-only machine with one thread. */
export function benchSpec(modelId: string, modelPath: string, contextTokens: number, extraArgs: string[] = []): LaunchSpec {
  return { modelId, engine: 'embedded', modelPath, contextTokens, gpuLayers: 0, threads: 1, aliases: [], extraArgs, env: {} };
}
