// A discovered model's file replaced on disk, through the real daemon, its watch and the embedded
// engine: what a re-download or a new quantisation under the same name does (written beside it
// as `.part`, renamed over it). Before: the model left the list while the new file settled (its
// engine evicted, a request told "does not exist"), and from the second replacement on the watch
// never saw the rename at all, so the daemon kept the old file's definition. Now the model stays
// listed under its id throughout, and is relaunched from the new file as an edited definition is.
import { copyFile, mkdir, mkdtemp, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';
import type { ModelView } from '../../core/contracts/snapshot.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let workDir: string;
let modelFile: string;
let models: DemoModels;
let daemon: DaemonProcess;
let client: OpenAI;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-replaced-'));
  models = await generateDemoModels(workDir);
  await mkdir(join(workDir, 'models'));
  modelFile = join(workDir, 'models', 'rep.gguf');
  await copyFile(models.tiny.path, modelFile);
  // Written long ago, as a library is: listed at the first scan, no settling wait.
  const longAgo = new Date(Date.now() - 60_000);
  await utimes(modelFile, longAgo, longAgo);
  const configPath = join(workDir, 'config.yaml');
  await writeFile(configPath, `modelDirs: [${JSON.stringify(join(workDir, 'models'))}]\nengines:\n  warmSpare: false\n`);
  daemon = await startDaemonProcess({ dataDir: await makeDataDir(), config: configPath });
  client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
}, 90_000);

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

const chat = () => client.chat.completions.create({ model: 'rep', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });

/** rep's view once it is ready with an engine other than `notPid`'s: what serves it now. */
async function readyView(notPid?: number): Promise<ModelView & { upstream: { pid: number } }> {
  for (;;) {
    const view = await daemon.model('rep');
    const pid = view.upstream?.pid;
    if (view.status.state === 'ready' && pid !== undefined && pid !== notPid) return view as ModelView & { upstream: { pid: number } };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Renames `source`'s copy over rep's file, as a download finishing does, and watches the model
 * list until rep's view shows the new file (`isNew`). Returns every /v1/models list seen meanwhile.
 */
async function replaceWith(source: string, isNew: (view: ModelView) => boolean): Promise<string[][]> {
  await copyFile(source, `${modelFile}.part`);
  // Written "just now" at the first look however loaded the machine (a time ahead of the clock
  // counts as just written), so the new file must settle while the model is listed.
  const justNow = new Date(Date.now() + 60_000);
  await utimes(`${modelFile}.part`, justNow, justNow);
  await rename(`${modelFile}.part`, modelFile);
  const lists: string[][] = [];
  for (;;) {
    lists.push((await client.models.list()).data.map((m) => m.id));
    const view = (await daemon.state()).models.find((m) => m.id === 'rep');
    if (view !== undefined && isNew(view)) return lists;
  }
}

describe('a resident model’s file renamed over by another model', () => {
  it('stays listed under its id and is served from the new file, every time it is replaced', async () => {
    await chat();
    const first = await readyView();
    expect(first.layerCount).toBe(2); // demo-tiny

    // demo-chat: 8 layers.
    const listsWhileReplaced = await replaceWith(models.chat.path, (view) => view.layerCount === 8);
    expect(listsWhileReplaced.filter((ids) => !ids.includes('rep')), 'rep left the list while its new file settled').toEqual([]);
    // The old engine is stopped once idle and a new one launched from the new file.
    const second = await readyView(first.upstream.pid);
    expect(second.layerCount).toBe(8);
    expect((await chat()).choices[0]?.finish_reason).toBe('length');

    // The second replacement: demo-draft, 2 layers again but f16 where demo-tiny is f32.
    const listsWhileReplacedAgain = await replaceWith(models.draft.path, (view) => view.layerCount === 2);
    expect(listsWhileReplacedAgain.filter((ids) => !ids.includes('rep'))).toEqual([]);
    const third = await readyView(second.upstream.pid);
    expect(third.estimateBytes.full).not.toBe(first.estimateBytes.full);
    expect((await chat()).choices[0]?.finish_reason).toBe('length');

    // Relaunched as an edited definition is, once per replacement: the new file's facts reach
    // the definition only once it has settled.
    expect(daemon.stderr().match(/rep: its definition changed since it was launched; relaunching it with the new one/g)).toHaveLength(2);
  }, 180_000);
});
