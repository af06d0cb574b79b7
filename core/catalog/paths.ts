// Where llmtray keeps its config and data, and where other tools keep their models.
//
// Every function takes the platform facts (`PlatformFacts`) as an argument instead of reading
// `process` itself, so the Windows and macOS rules are tested on Linux and a test never has to
// patch globals.
import { homedir } from 'node:os';
import { isAbsolute, join, resolve, win32 } from 'node:path';

export interface PlatformFacts {
  platform: NodeJS.Platform;
  env: Readonly<Record<string, string | undefined>>;
  homeDir: string;
}

export function currentPlatform(): PlatformFacts {
  return { platform: process.platform, env: process.env, homeDir: homedir() };
}

const APP_DIR = 'llmtray';
export const CONFIG_FILE_NAME = 'config.yaml';

function joinFor(facts: PlatformFacts, ...parts: string[]): string {
  return facts.platform === 'win32' ? win32.join(...parts) : join(...parts);
}

/**
 * The directory that holds config.yaml. `overrideDir` wins (Electron passes its userData
 * directory, so the packaged app and `llmtray serve` can be told apart or pointed at the same
 * place); then the platform's convention.
 */
export function configDir(facts: PlatformFacts, overrideDir?: string): string {
  if (overrideDir) return overrideDir;
  if (facts.platform === 'win32') return joinFor(facts, facts.env.APPDATA ?? win32.join(facts.homeDir, 'AppData', 'Roaming'), APP_DIR);
  if (facts.platform === 'darwin') return join(facts.homeDir, 'Library', 'Application Support', APP_DIR);
  const xdg = facts.env.XDG_CONFIG_HOME;
  // The XDG spec says a relative value is invalid and must be ignored.
  return join(xdg && isAbsolute(xdg) ? xdg : join(facts.homeDir, '.config'), APP_DIR);
}

/**
 * The directory for state llmtray writes itself (learned measurements, pins). On Linux it is
 * XDG_DATA_HOME, not the config directory, so a user who keeps ~/.config in git does not get
 * machine-specific measurements committed; elsewhere the platform has one place for both.
 */
export function dataDir(facts: PlatformFacts, overrideDir?: string): string {
  if (overrideDir) return overrideDir;
  if (facts.platform === 'win32' || facts.platform === 'darwin') return configDir(facts);
  const xdg = facts.env.XDG_DATA_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(facts.homeDir, '.local', 'share'), APP_DIR);
}

/** The config file to read: `--config FILE` if given (relative to cwd), else config.yaml in configDir. */
export function configFilePath(facts: PlatformFacts, options: { configFile?: string; overrideDir?: string; cwd?: string } = {}): string {
  if (options.configFile) return resolve(options.cwd ?? process.cwd(), options.configFile);
  return joinFor(facts, configDir(facts, options.overrideDir), CONFIG_FILE_NAME);
}

/**
 * Where GGUF files usually are when nobody configured anything: the user's own folder, LM
 * Studio (new and old layout), the Hugging Face hub cache, and llama.cpp's `-hf` download
 * cache. The env variables are the ones those tools themselves honour.
 */
export function defaultModelDirs(facts: PlatformFacts): string[] {
  const home = facts.homeDir;
  const env = facts.env;
  const hfHub = hfHubCacheDir(facts);
  const llamaCache =
    env.LLAMA_CACHE ??
    (facts.platform === 'win32'
      ? win32.join(env.LOCALAPPDATA ?? win32.join(home, 'AppData', 'Local'), 'llama.cpp')
      : facts.platform === 'darwin'
        ? join(home, 'Library', 'Caches', 'llama.cpp')
        : join(env.XDG_CACHE_HOME ?? join(home, '.cache'), 'llama.cpp'));
  return [
    join(home, 'models'),
    join(home, '.lmstudio', 'models'),
    join(home, '.cache', 'lm-studio', 'models'),
    hfHub,
    llamaCache,
  ];
}

/**
 * The Hugging Face hub cache as huggingface_hub finds it: `HF_HUB_CACHE`, else `HF_HOME/hub`,
 * else `XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`. Discovery reads it and
 * the pull (core/pull) writes it, so both must name the same folder.
 */
export function hfHubCacheDir(facts: PlatformFacts): string {
  const env = facts.env;
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HF_HOME) return join(env.HF_HOME, 'hub');
  const xdg = env.XDG_CACHE_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(facts.homeDir, '.cache'), 'huggingface', 'hub');
}

/** `~` and `~/x` become the home directory; a relative path is taken from `baseDir`. */
export function resolveUserPath(path: string, baseDir: string, homeDir: string): string {
  if (path === '~') return homeDir;
  if (path.startsWith('~/') || path.startsWith('~\\')) return join(homeDir, path.slice(2));
  return resolve(baseDir, path);
}
