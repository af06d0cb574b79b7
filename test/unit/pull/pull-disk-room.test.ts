// The pull on a disk without room, for real: the HF cache on a tiny tmpfs mounted for this file
// (the test machines run as root; a mount that fails fails the file, it is never skipped). One
// test is refused before a byte is written; in the other the disk fills while the pull writes.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { realClock } from '../../../core/common/clock.js';
import { PullRefused } from '../../../core/contracts/hub/pulls.js';
import { PullManager } from '../../../core/pull/pull-manager.js';
import { TINY_REPO, demoRepos } from '../../support/hub-standin/demo-repos.js';
import { startHubStandIn, type HubStandIn } from '../../support/hub-standin/hub-standin.js';

let hub: HubStandIn;
let root: string;
let mount: string;
let fileBytes: number;

beforeAll(async () => {
  const repos = await demoRepos();
  hub = await startHubStandIn(repos);
  fileBytes = repos.find((r) => r.id === TINY_REPO)!.files.find((f) => f.path === 'Tiny-Q4_K_M.gguf')!.bytes.length;
  root = await mkdtemp(join(tmpdir(), 'llmtray-pull-disk-'));
  mount = join(root, 'tiny-disk');
  await mkdir(mount);
  // Room for one and a half models: enough to pass the check, then filled while the pull writes.
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${Math.ceil((fileBytes * 1.5) / 4096) * 4096}`, 'tmpfs', mount]);
});

afterAll(async () => {
  await hub?.close();
  if (mount) execFileSync('umount', [mount]);
  if (root) await rm(root, { recursive: true, force: true });
});

async function manager(cacheDir: string): Promise<PullManager> {
  const dataDir = await mkdtemp(join(root, 'data-'));
  return PullManager.open({
    dataDir,
    facts: { platform: 'linux', homeDir: root, env: { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cacheDir } },
    clock: realClock,
    modelDirs: () => [cacheDir],
    whenServed: async () => true,
    reloadModels: async () => undefined,
    warn: () => undefined,
    retryDelaysMs: [0],
  });
}

test('a pull that does not fit is refused with both numbers before a byte is written', async () => {
  const cacheDir = join(mount, 'full-hub');
  const filler = join(mount, 'filler');
  // Leave less than the model's size free.
  await writeFile(filler, Buffer.alloc(Math.floor(fileBytes * 0.8)));
  try {
    const pulls = await manager(cacheDir);
    const error = await pulls.start(`hf.co/${TINY_REPO}:Q4_K_M`).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(PullRefused);
    expect((error as PullRefused).code).toBe('no_room');
    expect((error as PullRefused).message).toMatch(/needs [\d.]+ (KiB|MiB) more on the disk of .*, which has [\d.]+ (KiB|MiB|B) free; free /);
    const blobs = join(cacheDir, `models--${TINY_REPO.replace('/', '--')}`, 'blobs');
    expect(await readdir(blobs)).toEqual([]);
    await pulls.close();
  } finally {
    await rm(filler, { force: true });
    await rm(cacheDir, { recursive: true, force: true });
  }
});

test('a disk that fills while the pull writes stops it cleanly, saying how much to free, and nothing is offered', async () => {
  const cacheDir = join(mount, 'filling-hub');
  const pulls = await manager(cacheDir);
  const held = hub.holdNextDownloadAfter(20_000);
  const started = await pulls.start(`hf.co/${TINY_REPO}:Q4_K_M`);
  await held.reached;
  // Something else takes the rest of the disk meanwhile.
  const filler = join(mount, 'filler');
  const free = Number(execFileSync('df', ['--output=avail', '-B1', mount], { encoding: 'utf8' }).split('\n')[1]);
  await writeFile(filler, Buffer.alloc(free)).catch(() => undefined);
  held.release();
  const failed = await pulls.finished(started.id);
  expect(failed?.state).toBe('failed');
  expect(failed?.message).toMatch(/filled up after .* the pull stopped\. Free .* and pull again: it resumes/);
  const repo = join(cacheDir, `models--${TINY_REPO.replace('/', '--')}`);
  expect(await readdir(join(repo, 'snapshots')).catch(() => [])).toEqual([]);
  expect((await readdir(join(repo, 'blobs'))).every((name) => name.endsWith('.incomplete'))).toBe(true);
  await pulls.close();
  await rm(filler, { force: true });
});
