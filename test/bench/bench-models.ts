// The models every benchmark runs: the demo set, generated once per `npm run bench` into one
// temp folder that run-all removes at the end (test/support is not compiled to dist/, and a
// benchmark must run real engines on real GGUF files, so it generates them the way the demo does).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';

let folder: Promise<string> | null = null;
let models: Promise<DemoModels> | null = null;

/** A scratch folder for this run (configs, data dirs); removed by removeBenchFiles. */
export function benchDir(): Promise<string> {
  folder ??= mkdtemp(join(tmpdir(), 'llmtray-bench-'));
  return folder;
}

/** The demo models (demo-chat ~48 MB, demo-tiny ~2 MB), generated on first use. */
export function benchModels(): Promise<DemoModels> {
  models ??= benchDir().then(async (dir) => generateDemoModels(dir));
  return models;
}

/** A fresh sub-folder of the scratch folder, e.g. one daemon's data dir. */
export async function scratchDir(prefix: string): Promise<string> {
  return mkdtemp(join(await benchDir(), `${prefix}-`));
}

/** Removes everything the run wrote. Idempotent. */
export async function removeBenchFiles(): Promise<void> {
  if (folder === null) return;
  const dir = await folder;
  folder = null;
  models = null;
  await rm(dir, { recursive: true, force: true });
}
