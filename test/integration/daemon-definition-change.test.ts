// A new definition reaches a running model, through the real daemon and the embedded engine.
// Before, editing `ctx` from 1024 to 2048 left the engine on `-c 1024` while the snapshot said
// 2048: the tray showed one model and the endpoint served another. Now the idle engine is
// stopped and launched again with the new context, and a request sent meanwhile is answered by
// the new one.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';
import { eventually, makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let workDir: string;
let models: DemoModels;
let configPath: string;
let daemon: DaemonProcess;
let client: OpenAI;

const config = (ctx: number) => `modelDirs: []\nengines:\n  warmSpare: false\nmodels:\n  - id: tiny\n    path: ${JSON.stringify(models.tiny.path)}\n    ctx: ${ctx}\n    pinned: true\n`;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-definition-'));
  models = await generateDemoModels(workDir);
  configPath = join(workDir, 'config.yaml');
  await writeFile(configPath, config(1024));
  daemon = await startDaemonProcess({ dataDir: await makeDataDir(), config: configPath });
  client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
}, 90_000);

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** The engine serving tiny now, once there is one: its pid and the context on its command line. */
async function engine(): Promise<{ pid: number; ctx: string | undefined }> {
  for (;;) {
    const view = await daemon.model('tiny');
    const pid = view.upstream?.pid;
    if (pid !== undefined && view.status.state === 'ready') {
      const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
      const at = argv.findIndex((arg) => arg === '-c' || arg === '--ctx-size');
      return { pid, ctx: at < 0 ? undefined : argv[at + 1] };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('editing a running model’s context', () => {
  it('relaunches its engine with the new context, and the next request is answered by the new engine', async () => {
    await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    const before = await engine();
    expect(before.ctx).toBe('1024');

    await writeFile(configPath, config(2048));
    for (;;) {
      const now = await engine();
      if (now.pid !== before.pid) {
        expect(now.ctx).toBe('2048');
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const answer = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    expect(answer.choices[0]?.finish_reason).toBe('length');
    expect((await engine()).ctx).toBe('2048');
    // The log comes on the daemon's stderr pipe, apart from the HTTP answers: read once it has come.
    const relaunched = /tiny: its definition changed since it was launched; relaunching it with the new one/;
    expect(await eventually('the daemon logged the relaunch', async () => (relaunched.test(daemon.stderr()) ? daemon.stderr() : undefined))).toMatch(relaunched);
  }, 120_000);
});
