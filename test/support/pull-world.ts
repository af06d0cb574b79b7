// A person with no model yet, for tests of pulls through a real daemon: the Hub stand-in with the
// demo repos, an empty Hugging Face cache that is the daemon's only model folder (so a pulled
// model is the only one listed), and a data dir for a daemon whose HF_ENDPOINT and HF_HOME point
// at both. `startDaemon` may be called again after a daemon was stopped or killed (a pull resumed).
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from './daemon-process.js';
import { demoRepos } from './hub-standin/demo-repos.js';
import { startHubStandIn, type HubStandIn } from './hub-standin/hub-standin.js';

export interface PullWorld {
  hub: HubStandIn;
  workDir: string;
  /** HF_HOME: the cache is its hub/ folder. */
  hfHome: string;
  configPath: string;
  dataDir: string;
  startDaemon(): Promise<DaemonProcess>;
  /** A repo's folder in the cache (`models--OWNER--REPO`). */
  repoDir(repo: string): string;
  /** Closes the stand-in and removes the folders; the caller stops its daemons first. */
  close(): Promise<void>;
}

export async function makePullWorld(prefix: string): Promise<PullWorld> {
  const hub = await startHubStandIn(await demoRepos());
  const workDir = await mkdtemp(join(tmpdir(), prefix));
  const hfHome = join(workDir, 'hf');
  await mkdir(join(hfHome, 'hub'), { recursive: true });
  const configPath = join(workDir, 'config.yaml');
  await writeFile(configPath, `modelDirs: [${JSON.stringify(join(hfHome, 'hub'))}]\nengines:\n  warmSpare: false\n`);
  const dataDir = await makeDataDir();
  return {
    hub,
    workDir,
    hfHome,
    configPath,
    dataDir,
    startDaemon: () => startDaemonProcess({ dataDir, config: configPath, env: { HF_ENDPOINT: hub.url, HF_HOME: hfHome } }),
    repoDir: (repo) => join(hfHome, 'hub', `models--${repo.replace('/', '--')}`),
    close: async () => {
      await removeDataDir(dataDir);
      await hub.close();
      await rm(workDir, { recursive: true, force: true });
    },
  };
}

/**
 * Resolves once `path` holds `bytes`. What the daemon received is written a moment after the
 * stand-in sent it: a pull stopped before then keeps fewer bytes, and its resume asks for less.
 */
export async function untilOnDisk(path: string, bytes: number): Promise<void> {
  while (((await stat(path).catch(() => undefined))?.size ?? 0) < bytes) await new Promise((r) => setTimeout(r, 20));
}
