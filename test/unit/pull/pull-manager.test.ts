// The pull against the Hub stand-in (test/support/hub-standin/): a real HTTP server on loopback
// following the Hub's documented API, with its faults caused for real. Each test has its own
// HF_HOME and data dir; the stand-in and its repos are shared by the file.
import { createHash } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { listFiles, fileDownloadInfo } from '@huggingface/hub';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONTEXT_CAP } from '../../../core/catalog/catalog.js';
import { discoverModels } from '../../../core/catalog/discovery.js';
import { estimateFootprint } from '../../../core/catalog/footprint.js';
import { readGgufFacts } from '../../../core/catalog/gguf-metadata.js';
import { footprintAt } from '../../../core/policy/levels.js';
import { realClock, type Clock } from '../../../core/common/clock.js';
import { FakeClock } from '../../support/fake-clock.js';
import { PullRefused, type PullView } from '../../../core/contracts/hub/pulls.js';
import { PullManager } from '../../../core/pull/pull-manager.js';
import type { MachineRoom } from '../../../core/pull/quant-fit.js';
import { GATED_REPO, GATED_TOKEN, SIZES_REPO, SPLIT_REPO, TINY_REPO, VISION_REPO, demoRepos } from '../../support/hub-standin/demo-repos.js';
import { startHubStandIn, type HubStandIn } from '../../support/hub-standin/hub-standin.js';

let hub: HubStandIn;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  hub = await startHubStandIn(await demoRepos());
});
afterAll(() => hub.close());
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Setup {
  manager: PullManager;
  hfHome: string;
  cacheDir: string;
  dataDir: string;
  served: string[];
  reopen(): Promise<PullManager>;
}

async function setUp(env: Record<string, string> = {}, options: { hfHome?: string; dataDir?: string; hub?: HubStandIn; clock?: Clock; room?: MachineRoom } = {}): Promise<Setup> {
  const root = await mkdtemp(join(tmpdir(), 'llmtray-pull-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const hfHome = options.hfHome ?? join(root, 'hf');
  const dataDir = options.dataDir ?? join(root, 'data');
  await mkdir(dataDir, { recursive: true });
  const cacheDir = join(hfHome, 'hub');
  const served: string[] = [];
  const open = async () => {
    const manager = await PullManager.open({
      dataDir,
      facts: { platform: 'linux', homeDir: root, env: { HF_ENDPOINT: (options.hub ?? hub).url, HF_HOME: hfHome, ...env } },
      clock: options.clock ?? realClock,
      modelDirs: () => [cacheDir],
      // What the daemon's hook does, without the catalog: the name is served once discovery finds a file answering to it.
      whenServed: async (name) => {
        const found = (await discoverModels([cacheDir])).files.some((f) => f.aliases.some((a) => a.toLowerCase() === name.toLowerCase()));
        if (found) served.push(name);
        return found;
      },
      reloadModels: async () => undefined,
      warn: () => undefined,
      retryDelaysMs: [0, 0, 0],
      ...(options.room ? { machineRoom: () => options.room ?? null } : {}),
    });
    cleanups.push(() => manager.close());
    return manager;
  };
  return { manager: await open(), hfHome, cacheDir, dataDir, served, reopen: open };
}

async function pullToEnd(manager: PullManager, name: string): Promise<PullView> {
  const started = await manager.start(name);
  const finished = manager.finished(started.id);
  if (finished === undefined) throw new Error(`no pull ${started.id} after its start`);
  return finished;
}

async function refusal(promise: Promise<unknown>): Promise<PullRefused> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  if (!(error instanceof PullRefused)) throw new Error(`expected a PullRefused, got ${String(error)}`);
  return error;
}

/** Resolves once the pull's view says `bytes` are here (the stream writes them a moment after the stand-in sent them). */
async function untilReceived(manager: PullManager, id: string, bytes: number): Promise<void> {
  while ((manager.list().find((p) => p.id === id)?.receivedBytes ?? 0) < bytes) await new Promise((r) => setImmediate(r));
}

/** Resolves once `path` holds `bytes`: the bytes the stand-in sent are written a moment after. */
async function untilOnDisk(path: string, bytes: number): Promise<void> {
  while (((await stat(path).catch(() => undefined))?.size ?? 0) < bytes) await new Promise((r) => setTimeout(r, 5));
}

/** What a model file needs on a GPU whole at its default context, read from a local copy as the catalog reads a model it lists. */
async function fullNeed(url: string): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'llmtray-need-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'model.gguf');
  await writeFile(path, Buffer.from(await (await fetch(url)).arrayBuffer()));
  const facts = await readGgufFacts(path);
  if (!facts.ok) throw new Error(facts.error);
  const estimate = estimateFootprint({ path, facts: facts.facts, contextTokens: Math.min(facts.facts.contextLength ?? DEFAULT_CONTEXT_CAP, DEFAULT_CONTEXT_CAP), gpuLayers: 'all' });
  if (!estimate.ok) throw new Error(estimate.error);
  return footprintAt('full', estimate.estimate).deviceBytes;
}

const repoDir = (cacheDir: string, repo: string) => join(cacheDir, `models--${repo.replace('/', '--')}`);
const cdnGets = (sha: string) => hub.requests.filter((r) => r.method === 'GET' && r.path === `/cdn/${sha}`);

describe('the stand-in speaks the Hub API that @huggingface/hub speaks', () => {
  test('listFiles reads its tree with lfs.oid and size; fileDownloadInfo reads the resolve metadata', async () => {
    const files = [];
    for await (const entry of listFiles({ repo: { type: 'model', name: TINY_REPO }, recursive: true, hubUrl: hub.url })) files.push(entry);
    const q4 = files.find((f) => f.path === 'Tiny-Q4_K_M.gguf');
    expect(q4?.lfs?.oid).toBe(hub.sha256Of(TINY_REPO, 'Tiny-Q4_K_M.gguf'));
    const info = await fileDownloadInfo({ repo: { type: 'model', name: TINY_REPO }, path: 'Tiny-Q4_K_M.gguf', hubUrl: hub.url });
    expect(info?.size).toBe(q4?.size);
    expect(info?.etag).toContain(hub.sha256Of(TINY_REPO, 'Tiny-Q4_K_M.gguf'));
  });
});

describe('a pull', () => {
  test('lands the blob under its sha256 in the HF cache, links the snapshot, writes refs/main, and is served as hf.co/OWNER/REPO:QUANT', async () => {
    const { manager, cacheDir, served } = await setUp();
    const done = await pullToEnd(manager, 'hf.co/llmtray-test/tiny-gguf:q4_k_m');
    expect(done).toMatchObject({ state: 'done', id: `hf.co/${TINY_REPO}:Q4_K_M`, servedAs: `hf.co/${TINY_REPO}:Q4_K_M` });
    expect(done.receivedBytes).toBe(done.totalBytes);
    const sha = hub.sha256Of(TINY_REPO, 'Tiny-Q4_K_M.gguf');
    const dir = repoDir(cacheDir, TINY_REPO);
    const blob = await readFile(join(dir, 'blobs', sha));
    expect(createHash('sha256').update(blob).digest('hex')).toBe(sha);
    const commit = hub.commitOf(TINY_REPO);
    const link = join(dir, 'snapshots', commit, 'Tiny-Q4_K_M.gguf');
    expect(await readlink(link)).toBe(join('..', '..', 'blobs', sha));
    expect((await readFile(join(dir, 'refs', 'main'), 'utf8')).trim()).toBe(commit);
    expect(served).toEqual([`hf.co/${TINY_REPO}:Q4_K_M`]);
    // The other quant was not fetched.
    expect(cdnGets(hub.sha256Of(TINY_REPO, 'Tiny-Q8_0.gguf'))).toHaveLength(0);
  });

  test('OWNER/REPO with no quant takes Q4_K_M (the Hub default), and a file named inside the repo takes that file', async () => {
    const { manager } = await setUp();
    expect((await pullToEnd(manager, TINY_REPO)).id).toBe(`hf.co/${TINY_REPO}:Q4_K_M`);
    expect(await pullToEnd(manager, `${TINY_REPO}/Tiny-Q8_0.gguf`)).toMatchObject({ state: 'done', id: `hf.co/${TINY_REPO}:Q8_0` });
  });

  test("with no quant named, takes the largest that runs whole on this machine's GPU, from one header read with Range, and says why", async () => {
    const sizes = (path: string) => hub.requests.filter((r) => r.method === 'GET' && r.path === `/cdn/${hub.sha256Of(SIZES_REPO, path)}`);
    // A GPU with room between what the catalog would say Q4_K_M and F16 need whole, each costed from its own file as the daemon costs a model it runs.
    const needs = await Promise.all(['Sizes-Q4_K_M.gguf', 'Sizes-F16.gguf'].map((path) => fullNeed(`${hub.url}/cdn/${hub.sha256Of(SIZES_REPO, path)}`)));
    const room: MachineRoom = { mode: 'gpu', gpus: [{ index: 0, name: 'Test GPU', budgetBytes: Math.round((needs[0]! + needs[1]!) / 2) }], hostBytes: 1024 ** 3 };
    const before = hub.requests.length;
    const { manager } = await setUp({}, { room });
    const started = await manager.start(SIZES_REPO);
    expect(started.id).toBe(`hf.co/${SIZES_REPO}:Q4_K_M`);
    expect(started.choice).toMatch(/^Q4_K_M \([\d.]+ KiB\) is the largest quant that runs whole on GPU 0 Test GPU \([\d.]+ MiB for models\) at 4096 tokens of context: it needs [\d.]+ MiB; F16 \([\d.]+ KiB\) would need [\d.]+ MiB$/);
    expect((await manager.finished(started.id))?.state).toBe('done');
    // The header came from the smallest quant, by Range; the F16 file was never fetched.
    expect(hub.requests.slice(before).some((r) => r.path === `/cdn/${hub.sha256Of(SIZES_REPO, 'Sizes-Q2_K.gguf')}` && r.range?.startsWith('bytes=0-'))).toBe(true);
    expect(sizes('Sizes-F16.gguf').filter((r) => hub.requests.indexOf(r) >= before)).toEqual([]);
  });

  test('resumes a download cut mid-file with a Range request from the bytes it has', async () => {
    const { manager, cacheDir } = await setUp();
    const sha = hub.sha256Of(TINY_REPO, 'Tiny-Q8_0.gguf');
    const before = cdnGets(sha).length;
    const held = hub.holdNextDownloadAfter(100_000);
    const started = await manager.start(`hf.co/${TINY_REPO}:Q8_0`);
    await held.reached;
    await untilOnDisk(join(repoDir(cacheDir, TINY_REPO), 'blobs', `${sha}.incomplete`), 100_000);
    held.cut();
    const done = await manager.finished(started.id);
    expect(done?.state).toBe('done');
    const gets = cdnGets(sha).slice(before);
    expect(gets.map((r) => r.range)).toEqual([undefined, 'bytes=100000-']);
  });

  test('bytes that do not match the Hub sha256 are deleted and the pull says so; nothing is linked', async () => {
    // A stand-in of its own, so that the wrong bytes reach no other test.
    const fresh = await startHubStandIn(await demoRepos());
    cleanups.push(() => fresh.close());
    fresh.serveWrongBytes(TINY_REPO, 'Tiny-Q4_K_M.gguf');
    const { manager, cacheDir } = await setUp({}, { hub: fresh });
    const failed = await pullToEnd(manager, `hf.co/${TINY_REPO}:Q4_K_M`);
    expect(failed.state).toBe('failed');
    expect(failed.message).toMatch(/sha256 .* but the Hub says .*deleted\. Pull again/);
    const sha = fresh.sha256Of(TINY_REPO, 'Tiny-Q4_K_M.gguf');
    const dir = repoDir(cacheDir, TINY_REPO);
    await expect(stat(join(dir, 'blobs', sha))).rejects.toThrow();
    await expect(stat(join(dir, 'blobs', `${sha}.incomplete`))).rejects.toThrow();
    await expect(lstat(join(dir, 'snapshots', fresh.commitOf(TINY_REPO), 'Tiny-Q4_K_M.gguf'))).rejects.toThrow();
  });

  test('a file the Hub lists with a path that climbs out of the repo is never written: the pull is refused', async () => {
    const evil = await startHubStandIn([{ id: 'evil/Climb-GGUF', files: [{ path: '../../../outside-Q4_K_M.gguf', bytes: Buffer.from('GGUF') }] }]);
    cleanups.push(() => evil.close());
    const { manager, hfHome } = await setUp({}, { hub: evil });
    const error = await refusal(manager.start('hf.co/evil/Climb-GGUF:Q4_K_M'));
    expect(error.code).toBe('hub_answer');
    expect(error.message).toContain("named '../../../outside-Q4_K_M.gguf', which would be written outside the cache");
    await expect(stat(join(hfHome, 'outside-Q4_K_M.gguf'))).rejects.toThrow();
  });

  test('an unknown quant is refused listing the quants there are', async () => {
    const { manager } = await setUp();
    const error = await refusal(manager.start(`hf.co/${TINY_REPO}:Q3_K_S`));
    expect(error.code).toBe('unknown_quant');
    expect(error.message).toContain('the quants there are Q4_K_M, Q8_0');
  });

  test('a repo that does not exist and a name that is not one are refused in words', async () => {
    const { manager } = await setUp();
    expect((await refusal(manager.start('hf.co/llmtray-test/Nothing-GGUF:Q4_K_M'))).message).toMatch(/There is no model llmtray-test\/Nothing-GGUF on .*set HF_TOKEN/);
    expect((await refusal(manager.start('just-a-name'))).code).toBe('invalid_name');
  });

  test('a gated repo without a token is refused saying to set HF_TOKEN; with HF_TOKEN it is pulled', async () => {
    const without = await setUp();
    const error = await refusal(without.manager.start(`hf.co/${GATED_REPO}:Q4_K_M`));
    expect(error).toMatchObject({ status: 403, code: 'gated_repo' });
    expect(error.message).toContain('set HF_TOKEN');
    const withToken = await setUp({ HF_TOKEN: GATED_TOKEN });
    expect((await pullToEnd(withToken.manager, `hf.co/${GATED_REPO}:Q4_K_M`)).state).toBe('done');
    expect(hub.requests.some((r) => r.path.startsWith(`/${GATED_REPO}/resolve/`) && r.authorization === `Bearer ${GATED_TOKEN}`)).toBe(true);
  });

  test('the token file huggingface_hub writes (HF_HOME/token) opens a gate too, and a wrong token is told apart', async () => {
    const root = await mkdtemp(join(tmpdir(), 'llmtray-pull-token-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    await mkdir(join(root, 'hf'), { recursive: true });
    await writeFile(join(root, 'hf', 'token'), `${GATED_TOKEN}\n`);
    const { manager } = await setUp({}, { hfHome: join(root, 'hf') });
    expect((await pullToEnd(manager, `hf.co/${GATED_REPO}:Q4_K_M`)).state).toBe('done');
    const wrong = await setUp({ HF_TOKEN: 'hf_not_this_one' });
    const error = await refusal(wrong.manager.start(`hf.co/${GATED_REPO}:Q4_K_M`));
    expect(error).toMatchObject({ status: 403, code: 'gated_repo' });
    expect(error.message).toContain('the token from HF_TOKEN has no access');
  });

  test('a split model is fetched whole, every part linked under its own name', async () => {
    const { manager, cacheDir } = await setUp();
    const done = await pullToEnd(manager, `hf.co/${SPLIT_REPO}:Q4_K_M`);
    expect(done.files.map((f) => f.path)).toEqual(['Split-Q4_K_M-00001-of-00002.gguf', 'Split-Q4_K_M-00002-of-00002.gguf']);
    const found = (await discoverModels([cacheDir])).files;
    expect(found).toHaveLength(1);
    expect(found[0]!.parts).toHaveLength(2);
    expect(found[0]!.aliases).toContain(`hf.co/${SPLIT_REPO}:Q4_K_M`);
  });

  test("a vision repo's mmproj is fetched beside the model and attached to it", async () => {
    const { manager, cacheDir } = await setUp();
    const done = await pullToEnd(manager, `hf.co/${VISION_REPO}`);
    expect(done.files.map((f) => f.path)).toEqual(['Vision-Q4_K_M.gguf', 'mmproj-Vision-F16.gguf']);
    const [model] = (await discoverModels([cacheDir])).files;
    expect(model?.projectorPath).toMatch(/mmproj-Vision-F16\.gguf$/);
  });

  test('two pulls of the same model at once share one download', async () => {
    const { manager } = await setUp();
    const sha = hub.sha256Of(TINY_REPO, 'Tiny-Q4_K_M.gguf');
    const before = cdnGets(sha).length;
    const ends: PullView[] = [];
    const unsubscribe = manager.onDidChange((v) => v.state === 'done' && ends.push(v));
    cleanups.push(async () => unsubscribe());
    const held = hub.holdNextDownloadAfter(50_000);
    const [first, second] = await Promise.all([manager.start(`hf.co/${TINY_REPO}:Q4_K_M`), manager.start(`${TINY_REPO}:q4_k_m`)]);
    await held.reached;
    held.release();
    expect(second.id).toBe(first.id);
    expect((await manager.finished(first.id))?.state).toBe('done');
    expect(cdnGets(sha).length - before).toBe(1);
    // One pull, not two racing ones that share the bytes: it ends once.
    expect(ends).toHaveLength(1);
  });

  test('a pull of another name that needs the same blob waits for the one fetching it', async () => {
    const { manager } = await setUp();
    const sha = hub.sha256Of(TINY_REPO, 'Tiny-Q8_0.gguf');
    const before = cdnGets(sha).length;
    const held = hub.holdNextDownloadAfter(50_000);
    const first = await manager.start(`hf.co/${TINY_REPO}:Q8_0`);
    await held.reached;
    // The file's own path: another name, the same file and blob (its id is the same too, so it joins).
    const second = await manager.start(`${TINY_REPO}/Tiny-Q8_0.gguf`);
    held.release();
    expect((await manager.finished(first.id))?.state).toBe('done');
    expect((await manager.finished(second.id))?.state).toBe('done');
    expect(cdnGets(sha).length - before).toBe(1);
  });

  test('a daemon stopped mid-pull continues it when it starts again, from the bytes it had', async () => {
    const setup = await setUp();
    const sha = hub.sha256Of(TINY_REPO, 'Tiny-Q4_K_M.gguf');
    const before = cdnGets(sha).length;
    const held = hub.holdNextDownloadAfter(60_000);
    const started = await setup.manager.start(`hf.co/${TINY_REPO}:Q4_K_M`);
    await held.reached;
    // The bytes sent before the hold are on disk once the stream has flushed them: wait for the file to hold them.
    await untilOnDisk(join(repoDir(setup.cacheDir, TINY_REPO), 'blobs', `${sha}.incomplete`), 60_000);
    await setup.manager.close();
    held.release();
    expect((await setup.manager.finished(started.id))?.state).toBe('cancelled');
    const again = await setup.reopen();
    let finished = again.finished(started.id);
    while (finished === undefined) {
      await new Promise((r) => setImmediate(r));
      finished = again.finished(started.id);
    }
    expect((await finished).state).toBe('done');
    expect(cdnGets(sha).slice(before).map((r) => r.range)).toEqual([undefined, 'bytes=60000-']);
  });

  test('a cancelled pull stops, is not continued at the next start, and resumes when pulled again', async () => {
    const setup = await setUp();
    const held = hub.holdNextDownloadAfter(40_000);
    const started = await setup.manager.start(`hf.co/${TINY_REPO}:Q8_0`);
    await held.reached;
    const cancelled = setup.manager.cancel(`${TINY_REPO}:Q8_0`);
    held.release();
    expect((await cancelled).state).toBe('cancelled');
    const again = await setup.reopen();
    expect(again.finished(started.id)).toBeUndefined();
    expect((await pullToEnd(again, `hf.co/${TINY_REPO}:Q8_0`)).state).toBe('done');
  });

  test('delete removes what the pull wrote and keeps a blob that was in the cache before', async () => {
    const { manager, cacheDir } = await setUp();
    await pullToEnd(manager, `hf.co/${TINY_REPO}:Q4_K_M`);
    const dir = repoDir(cacheDir, TINY_REPO);
    const q4 = hub.sha256Of(TINY_REPO, 'Tiny-Q4_K_M.gguf');
    const { removed } = await manager.remove(`hf.co/${TINY_REPO}:Q4_K_M`);
    expect(removed.map((p) => resolve(p))).toEqual([join(dir, 'snapshots', hub.commitOf(TINY_REPO), 'Tiny-Q4_K_M.gguf'), join(dir, 'blobs', q4)]);
    expect((await discoverModels([cacheDir])).files).toHaveLength(0);
    // A blob another tool put there: the pull links it and a delete leaves it.
    const q8 = hub.sha256Of(TINY_REPO, 'Tiny-Q8_0.gguf');
    const q8bytes = await fetch(`${hub.url}/cdn/${q8}`).then(async (r) => Buffer.from(await r.arrayBuffer()));
    await mkdir(join(dir, 'blobs'), { recursive: true });
    await writeFile(join(dir, 'blobs', q8), q8bytes);
    await pullToEnd(manager, `hf.co/${TINY_REPO}:Q8_0`);
    await manager.remove(`hf.co/${TINY_REPO}:Q8_0`);
    expect((await stat(join(dir, 'blobs', q8))).size).toBe(q8bytes.length);
    expect((await refusal(manager.remove(`hf.co/${TINY_REPO}:Q8_0`))).code).toBe('not_pulled');
  });

  test('progress says bytes, total, rate and time left, at most once a second while downloading', async () => {
    const clock = new FakeClock();
    const { manager } = await setUp({}, { clock });
    const views: PullView[] = [];
    const unsubscribe = manager.onDidChange((v) => views.push(v));
    cleanups.push(async () => unsubscribe());
    const held = hub.holdNextDownloadAfter(200_000);
    const started = await manager.start(`hf.co/${TINY_REPO}:Q4_K_M`);
    await held.reached;
    await untilReceived(manager, started.id, 200_000);
    // Many chunks arrived within one (fake) instant: told as the pull started and once as its bytes began, then nothing until a second has passed.
    expect(views.map((v) => [v.state, v.receivedBytes])).toEqual([['downloading', 0], ['downloading', 0]]);
    await clock.advance(2000);
    // The trailing tick of the throttle tells the latest bytes.
    expect(views.at(-1)).toMatchObject({ state: 'downloading', receivedBytes: 200_000 });
    const told = views.length;
    held.release();
    const done = await manager.finished(started.id);
    expect(done?.state).toBe('done');
    // The rest arrived two (fake) seconds after the first 200,000 bytes: a rate and a time left were said while it came.
    const after = views.slice(told);
    expect(after.map((v) => v.state)).toEqual(['downloading', 'verifying', 'verifying', 'done']);
    // Every byte over the two seconds since the first sample (0 bytes, when the download began), and nothing left.
    expect(after[0]).toMatchObject({ receivedBytes: done!.totalBytes, bytesPerSecond: done!.totalBytes / 2, secondsLeft: 0 });
    expect(views.at(-1)).toMatchObject({ state: 'done', receivedBytes: done!.totalBytes, bytesPerSecond: 0, secondsLeft: null });
  });
});
