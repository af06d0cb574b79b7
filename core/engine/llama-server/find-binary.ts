// Finding the user's llama-server.
//
// Order: the configured path (the user said so; if it is wrong, say that rather than quietly
// running another build), then PATH (what the user runs in a shell), then the places the
// usual installers put it but that a desktop session's PATH often lacks — a tray app started
// by launchd or a .desktop file does not see the PATH a shell profile sets, which is why
// Homebrew's /opt/homebrew/bin is checked by name.
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter as hostDelimiter, posix, win32 } from 'node:path';

export interface FindLlamaServerOptions {
  /** The path from the config file, if the user set one. */
  configured?: string;
  /** The PATH to search (process.env.PATH by default). */
  envPath?: string;
  platform?: NodeJS.Platform;
  homeDir?: string;
  /** Whether `path` is an executable file. Injected so that discovery is unit-testable. */
  isExecutable?: (path: string) => Promise<boolean>;
}

export type LlamaServerSearch =
  | { found: true; path: string; source: 'configured' | 'PATH' | 'install-location' }
  | { found: false; reason: string; searched: string[] };

/**
 * Where llama-server is. Blocks on a few file checks; never throws. A configured path that
 * is not an executable is reported as not found with that reason (no fallback to another
 * build: the user chose that one).
 */
export async function findLlamaServer(options: FindLlamaServerOptions = {}): Promise<LlamaServerSearch> {
  const platform = options.platform ?? process.platform;
  const isExecutable = options.isExecutable ?? defaultIsExecutable(platform);
  const path = platform === 'win32' ? win32 : posix;
  const names = platform === 'win32' ? ['llama-server.exe'] : ['llama-server'];

  if (options.configured !== undefined && options.configured !== '') {
    if (await isExecutable(options.configured)) return { found: true, path: options.configured, source: 'configured' };
    return {
      found: false,
      reason: `the configured llama-server ${options.configured} is not an executable file; fix engines.llamaServer in the config or remove it to search PATH`,
      searched: [options.configured],
    };
  }

  const searched: string[] = [];
  const delimiter = platform === 'win32' ? ';' : platform === process.platform ? hostDelimiter : ':';
  const pathDirs = (options.envPath ?? process.env.PATH ?? '').split(delimiter).filter((d) => d !== '');
  for (const dir of pathDirs) {
    for (const name of names) {
      const candidate = path.join(dir, name);
      searched.push(candidate);
      if (await isExecutable(candidate)) return { found: true, path: candidate, source: 'PATH' };
    }
  }
  for (const dir of installLocations(platform, options.homeDir ?? homedir())) {
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (searched.includes(candidate)) continue;
      searched.push(candidate);
      if (await isExecutable(candidate)) return { found: true, path: candidate, source: 'install-location' };
    }
  }
  return {
    found: false,
    reason: `no llama-server in PATH or the usual install places (${searched.length} paths checked); the embedded engine will be used`,
    searched,
  };
}

/** Where Homebrew, distribution packages, `cmake --install` and llama.cpp's release zips put it. */
function installLocations(platform: NodeJS.Platform, home: string): string[] {
  if (platform === 'win32') {
    return [
      win32.join(home, 'AppData', 'Local', 'Microsoft', 'WinGet', 'Links'),
      win32.join(home, 'scoop', 'shims'),
      win32.join(home, 'llama.cpp'),
      'C:\\Program Files\\llama.cpp',
    ];
  }
  return [
    '/opt/homebrew/bin',
    '/usr/local/bin',
    '/usr/bin',
    posix.join(home, '.local', 'bin'),
    posix.join(home, 'llama.cpp', 'build', 'bin'),
    '/home/linuxbrew/.linuxbrew/bin',
  ];
}

function defaultIsExecutable(platform: NodeJS.Platform): (path: string) => Promise<boolean> {
  return async (path) => {
    try {
      const info = await stat(path);
      if (!info.isFile()) return false;
      if (platform !== 'win32') await access(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
}
