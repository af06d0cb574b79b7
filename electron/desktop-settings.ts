// Where the desktop app keeps its data, and which port it listens on.
//
// The app takes no command-line flags (it is started from a menu, a login item or a second
// click), so everything comes from the config file (listen.port) and the platform's data dir,
// the same ones `llmtray serve` uses. Two environment variables override them for tests and for
// a person running two copies on purpose: LLMTRAY_DATA_DIR and LLMTRAY_PORT.
//
// Electron's userData (the Chromium profile: caches, local storage, the single-instance lock)
// goes in the data dir too, not in the config folder Electron would pick (~/.config/llmtray,
// where config.yaml lives and which people keep in git): one data dir, one app instance.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';

export interface DesktopSettings {
  dataDir: string;
  /** Electron's userData folder, inside the data dir. */
  userDataDir: string;
  /** The listen port instead of the config's listen.port; 0 picks a free one. */
  port?: number;
}

export function desktopSettings(env: Readonly<Record<string, string | undefined>>, defaultDataDir: string): DesktopSettings {
  const fromEnv = env.LLMTRAY_DATA_DIR;
  if (fromEnv !== undefined && fromEnv !== '' && !isAbsolute(fromEnv)) {
    throw new Error(`LLMTRAY_DATA_DIR must be an absolute path, got '${fromEnv}'`);
  }
  const dataDir = resolve(fromEnv || defaultDataDir);
  const settings: DesktopSettings = { dataDir, userDataDir: join(dataDir, 'electron') };
  const port = env.LLMTRAY_PORT;
  if (port === undefined || port === '') return settings;
  const parsed = Number(port);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65535) throw new Error(`LLMTRAY_PORT must be a port number from 0 to 65535, got '${port}'`);
  return { ...settings, port: parsed };
}

/**
 * Makes the app's userData folder (and so the data dir), or says in one sentence why it cannot:
 * a data dir on a read-only or full disk, or under a file. Electron's setPath throws for a folder
 * that does not exist, and a throw at the main script's top level leaves Electron running with
 * no tray and no window behind its own "A JavaScript error occurred" box.
 */
export function makeUserDataDir(userDataDir: string): string | null {
  // Level by level, not `recursive: true`: that reports ENOENT for a parent it could not make on
  // a read-only disk, where the person needs to read EROFS.
  const missing: string[] = [];
  for (let at = resolve(userDataDir); !existsSync(at); at = dirname(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const level of missing) {
    try {
      mkdirSync(level, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      return `llmtray cannot create its data folder ${userDataDir}: ${(error as Error).message}. Make the folder writable (or free space on its disk), or set LLMTRAY_DATA_DIR to another folder, then start llmtray again.`;
    }
  }
  return null;
}
