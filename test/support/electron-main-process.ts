// The built desktop main process (dist/electron/main.js) as a child process under plain Node,
// with the recording Electron stand-in (test/support/electron-stand-in/) resolved in place of
// `electron`: what it did is read from the stand-in's record, and the test drives it as a person
// and the OS would (menu clicks, IPC from the page, signals, a second launch).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Snapshot } from '../../core/contracts/snapshot.js';
import { DAEMON_JS_FLAGS_SWITCH } from '../../electron/launch-mode.js';
import { eventually, type DaemonExit } from './daemon-process.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
export const MAIN_ENTRY = join(ROOT, 'dist', 'electron', 'main.js');
const REGISTER = join(ROOT, 'test', 'support', 'electron-stand-in', 'register.mjs');

/** One line of the stand-in's record (see its index.mjs for each `what`). */
export interface StandInRecord {
  what: string;
  at: number;
  pid: number;
  [field: string]: unknown;
}

/** A menu item as the stand-in records it. */
export interface RecordedMenuItem {
  type: string;
  label: string;
  enabled: boolean;
  checked: boolean;
  submenu?: RecordedMenuItem[];
}

/** Who invokes an IPC channel: the dashboard's own frame, or one the app must refuse. */
export type InvokeSender = 'dashboard' | 'foreign' | 'file-frame' | 'lookalike-frame' | 'destroyed-frame';

export interface ElectronMainProcess {
  child: ChildProcess;
  pid: number;
  dataDir: string;
  /** Every record so far, this process's and (sharing the file) a second instance's. */
  records(): StandInRecord[];
  /** Records of one kind from this process. */
  recorded(what: string): StandInRecord[];
  /** Waits (at most `timeoutMs`) until `pick` finds something in the records. */
  until<T>(what: string, pick: (records: StandInRecord[]) => T | undefined, timeoutMs?: number): Promise<T>;
  /** One of the stand-in's controls (its index.mjs `controls`), answered over the IPC channel. */
  control<T = unknown>(op: string, fields?: Record<string, unknown>): Promise<T>;
  /** The latest tray menu set. */
  trayMenu(): RecordedMenuItem[];
  exited: Promise<DaemonExit>;
  stderr(): string;
  /** The admin API of the daemon inside, from its daemon.json and token. */
  api(path: string, init?: RequestInit): Promise<Response>;
  state(): Promise<Snapshot>;
  /** SIGKILL if still running (cleanup after a failed test). */
  kill(): void;
}

export interface LaunchOptions {
  dataDir: string;
  /** Where the stand-in records; shared by two instances to see both. */
  recordFile: string;
  /** XDG_CONFIG_HOME for the app (Electron's default userData and the autostart folder live under it). */
  configHome: string;
  env?: Record<string, string>;
  /** What the app is started with after its binary; by default what `npm start` passes: the daemon's --js-flags and --demo. */
  args?: string[];
  /** The main script and the folder it starts in; the checkout's dist/electron/main.js unless a packaged layout's. */
  mainEntry?: string;
  cwd?: string;
}

export function launchElectronMain(options: LaunchOptions): ElectronMainProcess {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && key !== 'DISPLAY' && key !== 'WAYLAND_DISPLAY') env[key] = value;
  const child = spawn(process.execPath, ['--unhandled-rejections=strict', '--import', REGISTER, options.mainEntry ?? MAIN_ENTRY, ...(options.args ?? [DAEMON_JS_FLAGS_SWITCH, '--demo'])], {
    cwd: options.cwd ?? ROOT,
    env: {
      ...env,
      LLMTRAY_DATA_DIR: options.dataDir,
      LLMTRAY_PORT: '0',
      XDG_CONFIG_HOME: options.configHome,
      ELECTRON_STAND_IN_RECORD: options.recordFile,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout?.resume();
  const exited = new Promise<DaemonExit>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  let nextId = 1;
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  child.on('message', (message: { id: number; ok: boolean; value?: unknown; error?: string }) => {
    const pending = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.ok) pending?.resolve(message.value);
    else pending?.reject(new Error(message.error));
  });
  exited.then(() => {
    for (const pending of waiting.values()) pending.reject(new Error('the main process exited'));
  });

  const records = (): StandInRecord[] => {
    let text = '';
    try {
      text = readFileSync(options.recordFile, 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as StandInRecord);
  };
  const own = (): StandInRecord[] => records().filter((entry) => entry.pid === child.pid);
  const daemonInfo = async () => {
    const info = JSON.parse(await readFile(join(options.dataDir, 'daemon.json'), 'utf8')) as { origin: string };
    const token = (await readFile(join(options.dataDir, 'admin-token'), 'utf8')).trim();
    return { origin: info.origin, token };
  };
  const api = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const { origin, token } = await daemonInfo();
    return fetch(`${origin}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) } });
  };
  return {
    child,
    pid: child.pid ?? -1,
    dataDir: options.dataDir,
    records,
    recorded: (what) => own().filter((entry) => entry.what === what),
    until: (what, pick, timeoutMs = 60_000) => eventually(what, async () => pick(own()), timeoutMs),
    control: <T>(op: string, fields: Record<string, unknown> = {}) =>
      new Promise<T>((resolveControl, rejectControl) => {
        const id = nextId++;
        waiting.set(id, { resolve: resolveControl as (value: unknown) => void, reject: rejectControl });
        child.send({ id, op, ...fields });
      }),
    trayMenu: () => (own().filter((entry) => entry.what === 'tray-menu').at(-1)?.menu as RecordedMenuItem[] | undefined) ?? [],
    exited,
    stderr: () => stderr,
    api,
    state: async () => (await (await api('/api/state')).json()) as Snapshot,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
