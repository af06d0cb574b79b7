// Add model's view of the Hub, against the stand-in: the search, and a repo's quants each marked by
// how it would run on a given machine before anything is downloaded.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { HubAccess } from '../../../core/pull/hub-access.js';
import { repoOffer, searchHub } from '../../../core/pull/hub-browse.js';
import type { MachineRoom } from '../../../core/pull/quant-fit.js';
import { SIZES_REPO, TINY_REPO, VISION_REPO, demoRepos } from '../../support/hub-standin/demo-repos.js';
import { startHubStandIn, type HubStandIn } from '../../support/hub-standin/hub-standin.js';

let hub: HubStandIn;
let access: HubAccess;

beforeAll(async () => {
  hub = await startHubStandIn(await demoRepos());
  access = { endpoint: hub.url, token: undefined, tokenSource: undefined, cacheDir: '/nowhere' };
});
afterAll(() => hub.close());

test("the search is the Hub's, GGUF repos only, through @huggingface/hub's listModels", async () => {
  const hits = await searchHub(access, 'tiny');
  expect(hits).toEqual([{ repo: TINY_REPO, downloads: 0, likes: 0, gated: false }]);
  const seen = hub.requests.at(-1)!;
  expect(seen.path).toMatch(/^\/api\/models\?.*search=tiny/);
  expect(new URL(seen.path, hub.url).searchParams.getAll('filter')).toEqual(['gguf']);
});

test("a repo's quants, largest first, each marked by how it would run on this machine, before a byte of the models is fetched", async () => {
  // Room between the middle quant and the largest, as a budget of a few MiB makes it for these tiny models.
  const probe = await repoOffer(access, SIZES_REPO, { mode: 'gpu', gpus: [{ index: 0, name: 'probe', budgetBytes: 1024 ** 4 }], hostBytes: 1024 ** 4 });
  const needs = probe.quants.map((q) => Number(/\(([\d.]+) MiB\)/.exec(q.fitWords)?.[1]));
  const room: MachineRoom = { mode: 'gpu', gpus: [{ index: 0, name: 'Test GPU', budgetBytes: ((needs[0]! + needs[1]!) / 2) * 1024 ** 2 }], hostBytes: 1024 ** 3 };
  const before = hub.requests.length;
  const offer = await repoOffer(access, `hf.co/${SIZES_REPO}`, room);
  expect(offer.repo).toBe(SIZES_REPO);
  expect(offer.quants.map((q) => [q.quant, q.fit, q.pullAs])).toEqual([
    ['F16', 'partial', `hf.co/${SIZES_REPO}:F16`],
    ['Q4_K_M', 'whole', `hf.co/${SIZES_REPO}:Q4_K_M`],
    ['Q2_K', 'whole', `hf.co/${SIZES_REPO}:Q2_K`],
  ]);
  expect(offer.quants[1]!.fitWords).toMatch(/^whole on GPU 0 at 4096 tokens \([\d.]+ MiB\)$/);
  expect(offer.quants[0]!.fitWords).toMatch(/^partly in host RAM: [\d.]+ (KiB|MiB) on GPU 0, [\d.]+ (KiB|MiB) in RAM, at \d+ tokens$/);
  // Only the smallest quant's header was read, by Range; no model was downloaded whole.
  const cdn = hub.requests.slice(before).filter((r) => r.path.startsWith('/cdn/'));
  expect(cdn.length).toBeGreaterThan(0);
  expect(cdn.every((r) => r.path === `/cdn/${hub.sha256Of(SIZES_REPO, 'Sizes-Q2_K.gguf')}` && r.range !== undefined)).toBe(true);
});

test('with no machine measured yet the fit is unknown, and a projector beside the model is offered with it', async () => {
  const offer = await repoOffer(access, VISION_REPO, null);
  expect(offer.quants).toEqual([{ quant: 'Q4_K_M', path: 'Vision-Q4_K_M.gguf', sizeBytes: expect.any(Number), parts: 1, fit: 'unknown', fitWords: 'not known: llmtray has not measured this machine yet', pullAs: `hf.co/${VISION_REPO}:Q4_K_M` }]);
  expect(offer.projector?.path).toBe('mmproj-Vision-F16.gguf');
});

test('CPU only, and too big, say so with their numbers', async () => {
  const cpu = await repoOffer(access, SIZES_REPO, { mode: 'cpu', gpus: [], hostBytes: 1024 ** 3 });
  expect(cpu.quants.every((q) => q.fit === 'cpu' && /^CPU only, [\d.]+ MiB of host RAM at \d+ tokens$/.test(q.fitWords))).toBe(true);
  const small = await repoOffer(access, SIZES_REPO, { mode: 'cpu', gpus: [], hostBytes: 1024 });
  expect(small.quants[2]!.fit).toBe('too_big');
  expect(small.quants[2]!.fitWords).toMatch(/^too big here: it needs [\d.]+ MiB of host RAM; 1 KiB is free and there is no GPU llmtray can use$/);
});
