// The real daemon's watch on its config and model folders, while a model file is being written
// into one of them (a browser download, `curl -o`, a copy from a USB disk: a write every few
// milliseconds for minutes). Before, one debounce timer re-armed by every file event never
// fired while the file grew: a config edit (a new model, new client keys) waited for the
// download to end, though the docs say it applies at once. And a config file deleted under the
// running daemon unloaded its models with no line saying why.
import { open, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';
import { isServing } from '../../core/contracts/model-status.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

const CLIENT_KEY = 'watch-test-key-0123456789';
/** The growing file: its chunks, one every CHUNK_INTERVAL_MS, so it grows for about 6 s. */
const CHUNKS = 60;
const CHUNK_INTERVAL_MS = 100;

let workDir: string;
let modelsDir: string;
let configPath: string;
let models: DemoModels;
let daemon: DaemonProcess;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-config-watch-'));
  models = await generateDemoModels(workDir);
  modelsDir = join(workDir, 'models');
  await mkdir(modelsDir);
  configPath = join(workDir, 'config.yaml');
  await writeFile(configPath, `modelDirs: [${JSON.stringify(modelsDir)}]\nengines:\n  warmSpare: false\nmodels: []\n`);
  daemon = await startDaemonProcess({ dataDir: await makeDataDir(), config: configPath });
}, 90_000);

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const listed = async (): Promise<string[]> => (await daemon.state()).models.map((m) => m.id);

/**
 * Copies `source` to `target` in CHUNKS pieces, one every CHUNK_INTERVAL_MS, as a download
 * writes. Before the last piece, while `holdLast()` says so, it writes the piece before it again
 * at its place (a new mtime: the file still changes, as one being written does): the download
 * lasts until the test has seen what it waits for, however long a busy machine takes to show it,
 * and does not end on its own after a fixed 6 s.
 */
async function writeSlowly(source: string, target: string, holdLast: () => boolean): Promise<void> {
  const bytes = await readFile(source);
  const chunk = Math.ceil(bytes.length / CHUNKS);
  const file = await open(target, 'w');
  try {
    let offset = 0;
    for (; offset + chunk < bytes.length; offset += chunk) {
      await file.write(bytes.subarray(offset, offset + chunk));
      await file.sync();
      await sleep(CHUNK_INTERVAL_MS);
    }
    const before = offset - chunk;
    while (holdLast()) {
      await file.write(bytes.subarray(before, offset), 0, chunk, before);
      await file.sync();
      await sleep(CHUNK_INTERVAL_MS);
    }
    await file.write(bytes.subarray(offset), 0, bytes.length - offset, offset);
    await file.sync();
  } finally {
    await file.close();
  }
}

describe('a config edit while a model file is being written into a model folder', () => {
  it('applies while the file still grows, and the file is listed only once it has stopped growing', async () => {
    let writing = true;
    let addedWhileWriting = false;
    let keysWhileWriting = false;
    // The download ends once the edit was seen applied. An edit that waits for the download to
    // end is never seen: the download gives up 40 s in, so the expectations below say so
    // before the test's timeout would.
    const giveUpAt = Date.now() + 40_000;
    const holdLast = () => !(addedWhileWriting && keysWhileWriting) && Date.now() < giveUpAt;
    const written = writeSlowly(models.chat.path, join(modelsDir, 'growing.gguf'), holdLast).finally(() => (writing = false));
    // Let the download get going: the folder's events are what kept the edit from applying.
    await sleep(1000);
    await writeFile(
      configPath,
      [
        `modelDirs: [${JSON.stringify(modelsDir)}]`,
        'engines:',
        '  warmSpare: false',
        'listen:',
        `  clientKeys: [{ name: test, key: ${CLIENT_KEY} }]`,
        'models:',
        `  - { id: added, path: ${JSON.stringify(models.tiny.path)}, ctx: 512 }`,
        '',
      ].join('\n'),
    );

    const listedWhileWriting: string[][] = [];
    while (writing) {
      const ids = await listed();
      const keyRefused = (await fetch(`${daemon.endpoint}/models`)).status === 401;
      // Only what was answered before the last chunk was written counts as "while writing".
      if (!writing) break;
      if (ids.includes('added')) addedWhileWriting = true;
      if (keyRefused) keysWhileWriting = true;
      listedWhileWriting.push(ids);
      await sleep(100);
    }
    await written;

    expect(addedWhileWriting, 'the new model was not listed before the download ended').toBe(true);
    expect(keysWhileWriting, 'the new client key was not required before the download ended').toBe(true);
    expect(listedWhileWriting.filter((ids) => ids.includes('growing')), 'the file was offered as a model while it grew').toEqual([]);

    // Once it has stopped growing it is listed, with no further event from the folder.
    while (!(await listed()).includes('growing')) await sleep(100);
    const view = await daemon.model('growing');
    expect(view.status.state).not.toBe('quarantined');
    expect(view.layerCount).toBe(8);
  }, 60_000);
});

describe('the config file deleted under the running daemon', () => {
  it('says so in the log, naming the models that went with it and the one it unloads', async () => {
    await writeFile(
      configPath,
      `modelDirs: [${JSON.stringify(modelsDir)}]\nengines:\n  warmSpare: false\ndeletedConfigGrace: 1m\nmodels:\n  - { id: doomed, path: ${JSON.stringify(models.tiny.path)}, ctx: 512 }\n  - { id: idle, path: ${JSON.stringify(models.draft.path)}, ctx: 512 }\n`,
    );
    while (!(await listed()).includes('doomed')) await sleep(100);
    const load = await daemon.api('/api/models/doomed/load', { method: 'POST' });
    expect(load.status, await load.text()).toBe(200);
    while (!isServing((await daemon.model('doomed')).status.state)) await sleep(100);

    // Deleted and put back, as an editor that saves by delete-and-rename does: nothing is unloaded.
    const text = await readFile(configPath, 'utf8');
    await rm(configPath);
    while (!daemon.stderr().includes(`${configPath}: the file is gone; the config read from it keeps running`)) await sleep(100);
    expect(isServing((await daemon.model('doomed')).status.state)).toBe(true);
    // Put back whole, as an editor's rename does: a watch that fired between writeFile's truncate
    // and its write read an empty config, which defines no model (seen beside busy loops).
    await writeFile(`${configPath}.next`, text.replace('deletedConfigGrace: 1m', 'deletedConfigGrace: 1s'));
    await rename(`${configPath}.next`, configPath);
    while ((await daemon.state()).configErrors.length > 0) await sleep(100);
    expect(daemon.stderr()).not.toContain(`${configPath} was deleted`);
    expect(isServing((await daemon.model('doomed')).status.state)).toBe(true);

    // Deleted for good: once its grace (now 1 s) is over, the defaults apply and the log says what went.
    await rm(configPath);
    while (!daemon.stderr().includes(`${configPath} was deleted`)) await sleep(100);
    const line = daemon.stderr().split('\n').find((l) => l.includes(`${configPath} was deleted`));
    expect(line).toContain('the models it defined are gone: doomed, idle');
    expect(line).toContain('unloading doomed, which was running');
    expect(await listed()).not.toContain('doomed');
  }, 60_000);

  it('written again with an error: the defaults stay, and no surface speaks of a last good config', async () => {
    // Runs after the deletion above: the defaults are in force, and nothing good was read from the file since.
    await writeFile(configPath, `modelDirs: [${JSON.stringify(modelsDir)}]\nmodels:\n  - { id: back, path: ${JSON.stringify(models.tiny.path)}, cxt: 512 }\n`);
    const error = `${configPath}: models[0].cxt: unknown field, set to 512; did you mean "ctx"?`;
    while (!daemon.stderr().includes(`config not applied, the defaults stay (no good config was read from the file): ${error}`)) await sleep(100);
    const state = await daemon.state();
    expect(state.configInForce).toBe('defaults');
    expect(state.configErrors.some((line) => line.startsWith(error))).toBe(true);
    expect(state.models.map((m) => m.id)).not.toContain('back');
  }, 60_000);
});
