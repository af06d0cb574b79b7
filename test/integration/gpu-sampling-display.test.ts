// The live GPU sample never touches the display server (issue 24). systeminformation's
// graphics(), with DISPLAY set as in every desktop session, runs `xrandr --verbose` (the X server
// re-probes every output: the screen and mouse stutter) and `xdpyinfo`; it ran at every 2 s
// sample while a model was resident. Now the cards are listed at the start (and again when they
// may have changed) and each sample asks nvidia-smi for the figures alone.
//
// The real daemon on the fake workstation (test/fixtures/fake-gpu: an RTX 4090 and an RTX 3060),
// with DISPLAY set and recording `xrandr` and `xdpyinfo` first on PATH; a pinned model resident.
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDemoModels } from '../../core/catalog/demo/demo-models.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

const fakeDir = resolve(import.meta.dirname, '../fixtures/fake-gpu');

let workDir: string;
let stateDir: string;
let record: string;
let daemon: DaemonProcess;

const lines = async (file: string): Promise<string[]> => (await readFile(file, 'utf8').catch(() => '')).split('\n').filter((line) => line !== '');
const displayCalls = async (): Promise<string[]> => lines(record);
/** Every sample asks nvidia-smi for the cards' memory, in systeminformation's query or llmtray's own. */
const memorySamples = async (): Promise<number> => (await lines(join(stateDir, 'nvidia-smi-calls'))).filter((line) => line.startsWith('--query-gpu=')).length;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-display-'));
  stateDir = join(workDir, 'driver');
  const bin = join(workDir, 'bin');
  record = join(workDir, 'display-calls');
  await mkdir(stateDir);
  await mkdir(bin);
  // Nothing else on the cards; a line per card, as the fake driver reads this file with awk.
  await writeFile(join(stateDir, 'memory-used.csv'), '00000000:01:00.0, 0\n00000000:02:00.0, 0\n');
  await writeFile(join(stateDir, 'compute-apps.csv'), '');
  await writeFile(join(stateDir, 'nvidia-smi-calls'), '');
  // What a display server's tools answer, minimally; each call recorded.
  for (const tool of ['xrandr', 'xdpyinfo']) {
    await writeFile(join(bin, tool), `#!/bin/sh\necho "${tool} $*" >> ${JSON.stringify(record)}\n${tool === 'xdpyinfo' ? 'echo "name of display:    :99"' : 'echo "Screen 0: minimum 8 x 8, current 1920 x 1080, maximum 32767 x 32767"'}\n`);
    await chmod(join(bin, tool), 0o755);
  }
  const models = await generateDemoModels(workDir);
  const configPath = join(workDir, 'config.yaml');
  await writeFile(configPath, `modelDirs: []\nengines:\n  warmSpare: false\nmodels:\n  - id: tiny\n    path: ${JSON.stringify(models.tiny.path)}\n    ctx: 2048\n    pinned: true\n`);
  daemon = await startDaemonProcess({
    dataDir: await makeDataDir(),
    config: configPath,
    env: { PATH: `${bin}${delimiter}${fakeDir}${delimiter}${process.env.PATH ?? ''}`, FAKE_GPU_STATE_DIR: stateDir, DISPLAY: ':99' },
  });
}, 90_000);

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('sampling the GPUs with a display server there', () => {
  it('runs neither xrandr nor xdpyinfo while a model is resident, though the budget is sampled again and again', async () => {
    for (;;) {
      const view = await daemon.model('tiny');
      if (view.status.state === 'ready') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect((await daemon.state()).budget.mode, daemon.stderr().split('\n').filter((l) => /gpu|GPU|budget/.test(l)).join('\n')).toBe('gpu');
    // The listing at the start asked the display server: the recording works.
    const atReady = await displayCalls();
    expect(atReady.some((call) => call.startsWith('xrandr'))).toBe(true);
    const samplesAtReady = await memorySamples();
    // At least four more live samples (one each 2 s while a model is resident).
    while ((await memorySamples()) < samplesAtReady + 4) await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await displayCalls()).toEqual(atReady);
  }, 120_000);
});
