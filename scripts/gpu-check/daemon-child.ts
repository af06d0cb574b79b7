// The real daemon for `npm run gpu-check`: `node dist/core/cli.js serve --config FILE` as a
// child with its own data dir, reached through its admin API like any client. A child and not
// startDaemon() in this process, so its GPU probe, its engines and their environment are the
// ones a person's daemon has.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createAdminHttpApi } from '../../core/admin-client/admin-http-client.js';
import type { AdminApi } from '../../core/contracts/admin-routes.js';
import type { ModelView, Snapshot } from '../../core/contracts/snapshot.js';
import { DAEMON_NODE_FLAGS } from '../../core/daemon/node-flags.js';

export interface DaemonChild {
  /** http://127.0.0.1:PORT/v1. */
  endpoint: string;
  /** Its admin API with its token: the route table's calls, through the client the CLI uses. */
  admin: AdminApi;
  state(): Promise<Snapshot>;
  model(id: string): Promise<ModelView>;
  /** What it has logged so far. */
  log(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves at its exit. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

/** Starts the daemon and resolves once it serves (its daemon.json names it); rejects with its log if it exits first. */
export async function startDaemon(options: { cliPath: string; configPath: string; dataDir: string; logPath: string; startTimeoutMs?: number }): Promise<DaemonChild> {
  const child = spawn(process.execPath, [...DAEMON_NODE_FLAGS, options.cliPath, 'serve', '--config', options.configPath, '--data-dir', options.dataDir, '--port', '0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const file = createWriteStream(options.logPath);
  child.stderr?.setEncoding('utf8').on('data', (text: string) => {
    log += text;
    file.write(text);
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  void exited.then(() => file.end());
  let gone = false;
  void exited.then(() => (gone = true));

  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  let info: { pid: number; origin: string; endpoint: string } | null = null;
  while (info === null) {
    if (gone) throw new Error(`the daemon exited before it served:\n${log}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the daemon did not serve within ${options.startTimeoutMs ?? 60_000} ms:\n${log}`);
    }
    const written = await readFile(join(options.dataDir, 'daemon.json'), 'utf8').then((text) => JSON.parse(text) as { pid: number; origin: string; endpoint: string }, () => null);
    if (written?.pid === child.pid) info = written;
    else await sleep(100);
  }
  const token = (await readFile(join(options.dataDir, 'admin-token'), 'utf8')).trim();
  const { origin, endpoint } = info;
  const admin = createAdminHttpApi({ baseUrl: origin, fetch, token: () => token });
  const state = (): Promise<Snapshot> => admin.getSnapshot();
  let stopping: Promise<void> | null = null;
  return {
    endpoint,
    admin,
    state,
    async model(id) {
      const found = (await state()).models.find((m) => m.id === id);
      if (found === undefined) throw new Error(`the daemon has no model '${id}'`);
      return found;
    },
    log: () => log,
    stop(graceMs = 30_000) {
      stopping ??= (async () => {
        if (!gone) child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
