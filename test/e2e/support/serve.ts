// `llmtray serve --demo` as a child process, for the browser tests: the daemon a person starts,
// with the dashboard URL it prints. Small on purpose; test/support/daemon-process.ts is the
// general starter for process-level tests, and this one differs only where the browser tests
// need it: a fixed port for a restart (the open page must find the daemon again at the same
// origin), and readiness taken from the printed URL — the very line a person copies.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Snapshot } from '../../../core/contracts/snapshot.js';

export const REPO_DIR = resolve(import.meta.dirname, '..', '..', '..');
const CLI_ENTRY = join(REPO_DIR, 'dist', 'core', 'cli.js');
const DASHBOARD_INDEX = join(REPO_DIR, 'dist', 'renderer', 'index.html');

export interface ServeOptions {
  dataDir: string;
  /** A fixed port (a restart on the same origin); default 0, a free one. */
  port?: number;
  /** How long to wait for the printed dashboard URL. Default 60 s: a loaded 2-core machine. */
  readyTimeoutMs?: number;
}

export interface ServedDemo {
  port: number;
  /** http://127.0.0.1:PORT — the dashboard and /api. */
  origin: string;
  /** The OpenAI base URL, http://127.0.0.1:PORT/v1. */
  endpoint: string;
  /** The printed `http://127.0.0.1:PORT/#token=…`. */
  dashboardUrl: string;
  token: string;
  /** The daemon's stdout and stderr so far, for failure messages. */
  output(): string;
  /** GET /api/state with the admin token. */
  state(): Promise<Snapshot>;
  /** SIGTERM, then waits for the exit (the daemon stops its engines first); SIGKILL after 20 s. Idempotent. */
  stop(): Promise<void>;
}

/** Starts the daemon and resolves once it has printed its dashboard URL; rejects with its output if it exits or stays silent. */
export async function serveDemo(options: ServeOptions): Promise<ServedDemo> {
  for (const needed of [CLI_ENTRY, DASHBOARD_INDEX]) {
    if (!existsSync(needed)) throw new Error(`${needed} is missing: run \`npm run build\` before the browser tests`);
  }
  const child = spawn(
    process.execPath,
    [CLI_ENTRY, 'serve', '--demo', '--data-dir', options.dataDir, '--port', String(options.port ?? 0)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const alive = () => child.exitCode === null && child.signalCode === null;

  const dashboardUrl = await new Promise<string>((ready, fail) => {
    const timeoutMs = options.readyTimeoutMs ?? 60_000;
    const timer = setTimeout(() => fail(new Error(`llmtray serve printed no dashboard URL within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const onText = (text: string) => {
      output += text;
      const printed = /dashboard:\s+(http:\/\/\S+#token=\S+)/.exec(output);
      if (printed?.[1] !== undefined) {
        clearTimeout(timer);
        ready(printed[1]);
      }
    };
    child.stdout.setEncoding('utf8').on('data', onText);
    child.stderr.setEncoding('utf8').on('data', (text: string) => (output += text));
    child.once('error', (error) => {
      clearTimeout(timer);
      fail(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`llmtray serve exited (code ${code}, signal ${signal}) before printing its dashboard URL:\n${output}`));
    });
  }).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });

  const url = new URL(dashboardUrl);
  const origin = url.origin;
  const token = (await readFile(join(options.dataDir, 'admin-token'), 'utf8')).trim();
  let stopping: Promise<void> | null = null;
  return {
    port: Number(url.port),
    origin,
    endpoint: `${origin}/v1`,
    dashboardUrl,
    token,
    output: () => output,
    async state() {
      const response = await fetch(`${origin}/api/state`, { headers: { authorization: `Bearer ${token}` } });
      if (!response.ok) throw new Error(`GET /api/state answered ${response.status}: ${await response.text()}`);
      return (await response.json()) as Snapshot;
    },
    stop() {
      stopping ??= (async () => {
        if (!alive()) return;
        child.kill('SIGTERM');
        const force = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(force);
      })();
      return stopping;
    },
  };
}
