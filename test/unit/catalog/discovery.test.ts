import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { chooseProjector, discoverModels, type Discovery } from '../../../core/catalog/discovery.js';
import { assignUniqueIds } from '../../../core/catalog/model-ids.js';

let root: string;
let discovery: Discovery;

async function file(path: string, bytes: number): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), Buffer.alloc(bytes, 7));
}

async function link(path: string, target: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await symlink(target, join(root, path));
}

const byBaseId = (id: string) => discovery.files.filter((f) => f.baseId === id);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'llmtray-discovery-'));
  // dir 0: a person's own folder
  await file('own/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf', 100);
  await file('own/same-name/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf', 101);
  await file('own/big/Big-Model-00001-of-00003.gguf', 10);
  await file('own/big/Big-Model-00002-of-00003.gguf', 20);
  await file('own/big/Big-Model-00003-of-00003.gguf', 30);
  await file('own/broken/Part-00001-of-00002.gguf', 5);
  await file('own/orphan-00002-of-00002.gguf', 5);
  await file('own/llava/llava-v1.6-mistral-7b.Q4_K_M.gguf', 40);
  await file('own/llava/mmproj-model-q8_0.gguf', 3);
  await file('own/llava/mmproj-model-f16.gguf', 4);
  await file('own/notes.txt', 1);
  // dir 1: LM Studio, with the same file name as dir 0 and a link to dir 0's file
  await file('lmstudio/lmstudio-community/Qwen2.5-0.5B-Instruct-GGUF/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf', 102);
  await link('lmstudio/linked.gguf', join(root, 'own/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf'));
  // dir 2: the Hugging Face hub cache
  const phi = 'hf/models--bartowski--Phi-3-mini-GGUF';
  await file(`${phi}/blobs/old`, 50);
  await file(`${phi}/blobs/q4`, 60);
  await file(`${phi}/blobs/q8`, 70);
  await file(`${phi}/blobs/proj`, 8);
  await file(`${phi}/refs/main`, 0);
  await writeFile(join(root, phi, 'refs/main'), 'rev2\n');
  await link(`${phi}/snapshots/rev1/Phi-3-mini-Q4_K_M.gguf`, '../../blobs/old');
  await link(`${phi}/snapshots/rev2/Phi-3-mini-Q4_K_M.gguf`, '../../blobs/q4');
  await link(`${phi}/snapshots/rev2/Phi-3-mini-Q8_0.gguf`, '../../blobs/q8');
  await link(`${phi}/snapshots/rev2/mmproj-Phi-3-f16.gguf`, '../../blobs/proj');
  await file('hf/models--someone--Single-gguf/blobs/only', 80);
  await link('hf/models--someone--Single-gguf/snapshots/abc/single.gguf', '../../blobs/only');
  await link('hf/models--someone--Gone/snapshots/abc/gone.gguf', '../../blobs/deleted');
  await file('hf/datasets--x--y/snapshots/abc/data.gguf', 9);
  discovery = await discoverModels([join(root, 'own'), join(root, 'lmstudio'), join(root, 'hf'), join(root, 'does-not-exist')]);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('discovery', () => {
  test('a split model is one model: the first part, the sum of the sizes', () => {
    expect(byBaseId('big-model')).toEqual([
      expect.objectContaining({
        path: join(root, 'own/big/Big-Model-00001-of-00003.gguf'),
        parts: [1, 2, 3].map((i) => join(root, `own/big/Big-Model-0000${i}-of-00003.gguf`)),
        sizeBytes: 60,
      }),
    ]);
    expect(discovery.files.some((f) => /0000[23]-of/.test(f.path))).toBe(false);
  });

  test('a split model with a missing part is listed with the reason; one without its first part is not', () => {
    const [broken] = byBaseId('part');
    expect(broken?.problem).toBe(`split model is missing part 2 of 2 in ${join(root, 'own/broken')}`);
    expect(byBaseId('orphan')).toEqual([]);
    expect(discovery.problems).toContain(`${join(root, 'own/orphan')}: split model has no first part (-00001-of-00002.gguf); it is not listed`);
  });

  test('projectors are attached to the models in their folder, never listed, f16 preferred', () => {
    const [llava] = byBaseId('llava-v1.6-mistral-7b.q4_k_m');
    expect(llava?.projectorPath).toBe(join(root, 'own/llava/mmproj-model-f16.gguf'));
    expect(discovery.files.some((f) => f.path.includes('mmproj'))).toBe(false);
    expect(byBaseId('qwen2.5-0.5b-instruct-q4_k_m').every((f) => f.projectorPath === undefined)).toBe(true);
  });

  test('the Hugging Face cache: refs/main picks the snapshot, ids from the repo name, quantisation as the tag', () => {
    const phi = discovery.files.filter((f) => f.baseId.startsWith('phi-3-mini'));
    expect(phi.map((f) => f.baseId).sort()).toEqual(['phi-3-mini:q4_k_m', 'phi-3-mini:q8_0']);
    const q4 = phi.find((f) => f.baseId === 'phi-3-mini:q4_k_m')!;
    // The path stays the snapshot link (llama.cpp finds split parts by name beside it); identity and size come from the blob.
    expect(q4.path).toBe(join(root, 'hf/models--bartowski--Phi-3-mini-GGUF/snapshots/rev2/Phi-3-mini-Q4_K_M.gguf'));
    expect(q4.realPath).toBe(join(root, 'hf/models--bartowski--Phi-3-mini-GGUF/blobs/q4'));
    expect(q4.sizeBytes).toBe(60);
    expect(q4.projectorPath).toBe(join(root, 'hf/models--bartowski--Phi-3-mini-GGUF/snapshots/rev2/mmproj-Phi-3-f16.gguf'));
    expect(byBaseId('single')).toHaveLength(1);
  });

  test('a dangling snapshot link is reported, datasets are ignored, a missing model dir is silent', () => {
    expect(discovery.problems.some((p) => p.startsWith(join(root, 'hf/models--someone--Gone/snapshots/abc/gone.gguf')))).toBe(true);
    expect(discovery.files.some((f) => f.path.includes('datasets--'))).toBe(false);
    expect(discovery.problems.some((p) => p.includes('does-not-exist'))).toBe(false);
  });

  test('the same real file through two folders is one model, from the first folder', () => {
    const qwens = byBaseId('qwen2.5-0.5b-instruct-q4_k_m');
    expect(qwens.map((f) => f.path).sort()).toEqual([
      join(root, 'lmstudio/lmstudio-community/Qwen2.5-0.5B-Instruct-GGUF/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf'),
      join(root, 'own/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf'),
      join(root, 'own/same-name/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf'),
    ]);
    expect(byBaseId('linked')).toEqual([]);
  });

  test('colliding names: the earliest folder keeps the plain id, the others get a suffix fixed by their own path', () => {
    const ids = assignUniqueIds(discovery.files, new Set());
    const own = ids.get(join(root, 'own/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf'));
    const sameName = ids.get(join(root, 'own/same-name/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf'));
    const lmstudio = ids.get(join(root, 'lmstudio/lmstudio-community/Qwen2.5-0.5B-Instruct-GGUF/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf'));
    expect(own).toBe('qwen2.5-0.5b-instruct-q4_k_m');
    expect(sameName).toMatch(/^qwen2\.5-0\.5b-instruct-q4_k_m-[0-9a-f]{6}$/);
    expect(lmstudio).toMatch(/^qwen2\.5-0\.5b-instruct-q4_k_m-[0-9a-f]{6}$/);
    expect(new Set(ids.values()).size).toBe(discovery.files.length);
    // Stable: the suffix does not depend on the other files (here: without the plain-id winner).
    const without = assignUniqueIds(discovery.files.filter((f) => f.path !== join(root, 'own/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf')), new Set());
    expect(without.get(join(root, 'lmstudio/lmstudio-community/Qwen2.5-0.5B-Instruct-GGUF/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf'))).toBe(lmstudio);
  });

  test('a Hugging Face file answers to hf.co/OWNER/REPO:QUANT, and the repo default (Q4_K_M, or its only model) to hf.co/OWNER/REPO', () => {
    const aliasesOf = (id: string) => discovery.files.find((f) => f.baseId === id)?.aliases;
    expect(aliasesOf('phi-3-mini:q4_k_m')).toEqual(['hf.co/bartowski/Phi-3-mini-GGUF:Q4_K_M', 'hf.co/bartowski/Phi-3-mini-GGUF']);
    expect(aliasesOf('phi-3-mini:q8_0')).toEqual(['hf.co/bartowski/Phi-3-mini-GGUF:Q8_0']);
    expect(aliasesOf('single')).toEqual(['hf.co/someone/Single-gguf']);
    // A file outside the hub cache has no hub name.
    expect(discovery.files.find((f) => f.path === join(root, 'own/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf'))?.aliases).toEqual([]);
  });

  test('the projector choice is deterministic', () => {
    expect(chooseProjector(['b-mmproj-q8_0.gguf', 'a.gguf', 'mmproj-x.gguf'])).toBe('b-mmproj-q8_0.gguf');
    expect(chooseProjector(['mmproj-q8.gguf', 'mmproj-F16.gguf'])).toBe('mmproj-F16.gguf');
    expect(chooseProjector(['model.gguf', 'mmproj.txt'])).toBeUndefined();
  });
});
