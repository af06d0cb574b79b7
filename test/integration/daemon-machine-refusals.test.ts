// A model the machine keeps from loading (its file missing, the data dir's disk full) is never
// quarantined and is served again once that clears (daemon-machine-faults.test.ts), but a
// request for it is answered at once, with the machine's words and a Retry-After: it used to be
// held for the whole activationWait and then told only "it is failed (retrying in 2 s)".
//
// activationWait is 2 minutes here and each case's bound is less, so a request held for it
// fails the case; nothing asserts a duration.
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';
import { eventually, makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let workDir: string;
let models: DemoModels;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-machine-refusals-'));
  models = await generateDemoModels(workDir);
}, 60_000);

afterAll(async () => {
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

async function configFor(name: string, modelPath: string): Promise<string> {
  const path = join(workDir, `${name}.yaml`);
  await writeFile(path, `modelDirs: []\nengines:\n  warmSpare: false\nactivationWait: 2m\nmodels:\n  - id: tiny\n    path: ${JSON.stringify(modelPath)}\n    ctx: 2048\n`);
  return path;
}

/** Resolves once a request for tiny is answered; a refusal meanwhile is the probe's last error, said if it never is. */
function served(client: OpenAI): () => Promise<true> {
  return async () => {
    const refusal = await refusalOf(client);
    if (refusal !== null) throw refusal;
    return true;
  };
}

/** The refusal a request for tiny gets, or null when it was answered. */
async function refusalOf(client: OpenAI): Promise<APIError | null> {
  try {
    await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    return null;
  } catch (error) {
    if (error instanceof APIError) return error;
    throw error;
  }
}

function expectMachineRefusal(refusal: APIError | null, words: RegExp): void {
  expect(refusal, 'a refusal').not.toBeNull();
  expect(refusal!.status).toBe(503);
  expect(refusal!.code).toBe('model_environment_failure');
  expect(refusal!.message).toMatch(words);
  expect(Number(refusal!.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

describe('a model file moved away (its drive unplugged) and back', () => {
  let daemon: DaemonProcess | undefined;

  afterAll(async () => {
    await daemon?.stop();
    if (daemon) await removeDataDir(daemon.dataDir);
  });

  it('is refused at once saying the file is missing, and served from it once it is back', async () => {
    const drive = join(workDir, 'usb');
    await mkdir(drive);
    const path = join(drive, 'tiny.gguf');
    await copyFile(models.tiny.path, path);
    daemon = await startDaemonProcess({ dataDir: await makeDataDir(), config: await configFor('unplugged', path) });
    const client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0, timeout: 100_000 });
    await rename(drive, `${drive}.unplugged`);
    expectMachineRefusal(await refusalOf(client), /the model file is missing|ENOENT/);
    expect((await refusalOf(client))!.message).toContain(path);
    // The card and status say the same, and it is not quarantined.
    expect((await daemon.model('tiny')).status.recovery).toMatchObject({ kind: 'environment', nextAction: 'retry' });

    await rename(`${drive}.unplugged`, drive);
    await eventually('tiny served from the file put back', served(client), 90_000, 500);
  }, 120_000);
});

describe('a configured model whose file is not there yet, in a folder not there yet', () => {
  let daemon: DaemonProcess | undefined;

  afterAll(async () => {
    await daemon?.stop();
    if (daemon) await removeDataDir(daemon.dataDir);
  });

  it('is refused at once naming the path, and served from the file once it is there', async () => {
    const drive = join(workDir, 'not-yet');
    const path = join(drive, 'tiny.gguf');
    daemon = await startDaemonProcess({ dataDir: await makeDataDir(), config: await configFor('missing', path) });
    const client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0, timeout: 100_000 });
    expectMachineRefusal(await refusalOf(client), /cannot read the model file: ENOENT/);
    expect((await refusalOf(client))!.message).toContain(path);
    expect((await daemon.model('tiny')).status.recovery).toMatchObject({ kind: 'environment', nextAction: 'retry' });

    // The folder and the file appear (a drive mounted, a download finished): the catalog reads it again.
    await mkdir(drive);
    await copyFile(models.tiny.path, `${path}.part`);
    await rename(`${path}.part`, path);
    await eventually('tiny served from the file once it is there', served(client), 90_000, 500);
  }, 120_000);
});

describe.runIf(process.getuid?.() === 0)('a data dir on a disk that is full (a real 16 MiB tmpfs, filled)', () => {
  let mountPoint: string;
  let daemon: DaemonProcess | undefined;

  beforeAll(async () => {
    mountPoint = await mkdtemp(join(tmpdir(), 'llmtray-refusal-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mountPoint]);
  });

  afterAll(async () => {
    await daemon?.stop();
    if (daemon) await removeDataDir(daemon.dataDir).catch(() => undefined);
    execFileSync('umount', ['-l', mountPoint]);
    await rm(mountPoint, { recursive: true, force: true });
  });

  it('is refused at once saying the disk is full, and served once there is room', async () => {
    const dataDir = join(mountPoint, 'data');
    await mkdir(dataDir);
    daemon = await startDaemonProcess({ dataDir, config: await configFor('full', models.tiny.path) });
    const client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0, timeout: 100_000 });
    const filler = join(mountPoint, 'filler');
    try {
      execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k'], { stdio: 'ignore' });
    } catch {
      // dd exits 1 on ENOSPC, which is the point.
    }
    expectMachineRefusal(await refusalOf(client), /the data dir's disk is full/);
    await rm(filler);
    await eventually('tiny served once the disk has room', served(client), 90_000, 500);
  }, 120_000);
});
