// LAN mode for real: `llmtray serve --config FILE` listening on 127.0.0.2, which stands in for
// a LAN address (a connection to it is not a loopback one as far as llmtray is concerned), with
// two apps' client keys, an allowed host name and a CORS origin. Other machines' apps get the
// models with a key and nothing else; the CLI and the printed dashboard keep working on
// 127.0.0.1; and without a key the daemon does not start at all.
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { AuthenticationError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Snapshot } from '../../core/contracts/snapshot.js';
import { eventually, makeDataDir, removeDataDir, runCli, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';
import { tinyModel } from '../support/test-models.js';

const LAN = '127.0.0.2';
const LAPTOP = 'laptop-key-5c2e9a41d07b';
const PHONE = 'phone-key-83fd10a6c2e4';

let dir: string;
let configPath: string;
let modelPath: string;
let daemon: DaemonProcess;
let lanUrl: string;

function configText(keys: { name: string; key: string }[], host = LAN): string {
  return `listen:
  host: ${host}
  clientKeys:
${keys.map((k) => `    - { name: ${k.name}, key: ${k.key} }`).join('\n') || '    []'}
  allowedHosts: [workstation.lan]
  corsOrigins: ["http://192.168.1.7:3000"]
modelDirs: []
models:
  - { id: tiny, path: ${JSON.stringify(modelPath)}, ctx: 1024 }
`;
}

/** A raw request to the LAN address, for what the SDK will not send (a hostile Host, a preflight). */
function lanRequest(path: string, options: { method?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: LAN, port: daemon.port, path, method: options.method ?? 'GET', headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `GET /api/state` on 127.0.0.1 as the dashboard and the CLI read it, as text, to search it for keys. */
async function adminStateText(): Promise<string> {
  const response = await fetch(`${daemon.origin}/api/state`, { headers: { authorization: `Bearer ${daemon.token}` } });
  expect(response.status).toBe(200);
  return response.text();
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-lan-'));
  modelPath = await tinyModel();
  configPath = join(dir, 'config.yaml');
  await writeFile(configPath, configText([{ name: 'laptop', key: LAPTOP }, { name: 'phone', key: PHONE }]));
  daemon = await startDaemonProcess({ config: configPath, startTimeoutMs: 60_000 });
  lanUrl = `http://${LAN}:${daemon.port}/v1`;
});

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  await rm(dir, { recursive: true, force: true });
});

describe('llmtray serve on a network address with client keys', () => {
  it('prints the network endpoint, and serves the official openai client there with a key', async () => {
    const printed = await daemon.untilStdout(`network:    http://workstation.lan:${daemon.port}/v1`);
    expect(printed).toContain(`network:    ${lanUrl}`);
    expect(printed).toContain(`network:    http://workstation.lan:${daemon.port}/v1`);
    const client = new OpenAI({ baseURL: lanUrl, apiKey: LAPTOP, maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
    expect(answer.choices).toHaveLength(1);
    expect(answer.choices[0]?.message.role).toBe('assistant');
  });

  // Before the revoking test below, so that both keys are configured when the snapshot is read.
  it('tells the dashboard, the tray and the CLI every endpoint and that a key is required, with no key in it', async () => {
    const text = await adminStateText();
    const state = JSON.parse(text) as Snapshot;
    expect(state.endpoint).toBe(`${daemon.origin}/v1`);
    expect(state.networkEndpoints).toEqual([lanUrl, `http://workstation.lan:${daemon.port}/v1`]);
    expect(state.keysRequired).toBe(true);
    expect(state.clientKeyNames).toEqual(['laptop', 'phone']);
    for (const key of [LAPTOP, PHONE]) expect(text).not.toContain(key);
  });

  it('refuses a wrong key, and a key removed from the config, while the other app keeps working', async () => {
    const wrong = await new OpenAI({ baseURL: lanUrl, apiKey: 'guessed-key-000000000', maxRetries: 0 }).models.list().catch((error: unknown) => error);
    expect(wrong).toBeInstanceOf(AuthenticationError);
    expect((wrong as AuthenticationError).message).toContain('listen.clientKeys');

    const phone = new OpenAI({ baseURL: lanUrl, apiKey: PHONE, maxRetries: 0 });
    expect((await phone.models.list()).data.map((m) => m.id)).toEqual(['tiny']);
    // Revoking the phone: its entry goes, the daemon reloads its config by itself.
    await writeFile(configPath, configText([{ name: 'laptop', key: LAPTOP }]));
    const revoked = await eventually('the removed key is refused', async () => {
      const error = await phone.models.list().then(() => undefined, (e: unknown) => e);
      return error instanceof AuthenticationError ? error : undefined;
    });
    expect(revoked.status).toBe(401);
    // The snapshot is built from the same config the router reads: the phone is no longer offered.
    expect((JSON.parse(await adminStateText()) as Snapshot).clientKeyNames).toEqual(['laptop']);
    const laptop = new OpenAI({ baseURL: lanUrl, apiKey: LAPTOP, maxRetries: 0 });
    expect((await laptop.models.list()).data.map((m) => m.id)).toEqual(['tiny']);
  });

  it('refuses a hostile Host with a 403 naming listen.allowedHosts, and serves the allowed name', async () => {
    const key = { authorization: `Bearer ${LAPTOP}` };
    const hostile = await lanRequest('/v1/models', { headers: { ...key, host: `attacker.example:${daemon.port}` } });
    expect(hostile.status).toBe(403);
    expect(JSON.parse(hostile.body).error.message).toContain('add it to listen.allowedHosts');
    expect((await lanRequest('/v1/models', { headers: { ...key, host: `workstation.lan:${daemon.port}` } })).status).toBe(200);
  });

  it('answers a CORS preflight from the allowed origin and refuses one from another', async () => {
    const preflight = (origin: string) =>
      lanRequest('/v1/chat/completions', { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
    const allowed = await preflight('http://192.168.1.7:3000');
    expect(allowed.status).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe('http://192.168.1.7:3000');
    const other = await preflight('http://192.168.1.66:3000');
    expect(other.status).toBe(403);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    expect(JSON.parse(other.body).error.message).toContain('listen.corsOrigins');
  });

  it('keeps the admin API off the network, while the CLI and the printed dashboard work on 127.0.0.1', async () => {
    const admin = await lanRequest('/api/state', { headers: { authorization: `Bearer ${daemon.token}` } });
    expect(admin.status).toBe(403);
    expect(JSON.parse(admin.body).error.message).toContain('listen.admin: network');
    expect((await lanRequest('/metrics')).status).toBe(403);

    expect(daemon.origin).toBe(`http://127.0.0.1:${daemon.port}`);
    expect(daemon.dashboardUrl.startsWith(`http://127.0.0.1:${daemon.port}/#token=`)).toBe(true);
    const page = await fetch(daemon.dashboardUrl);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="root">');
    const status = await runCli(['status', '--data-dir', daemon.dataDir]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('tiny');
    expect(status.stdout).toContain(`network   ${lanUrl}`);
    // The names of the keys the config holds now ('phone' was revoked above), never a key.
    expect(status.stdout).toMatch(/^keys +apps send one of listen\.clientKeys \(laptop\)$/m);
    expect(status.stdout).not.toContain(LAPTOP);
    // Local apps need a key too once there are keys: 127.0.0.1 is reachable by every user of the machine.
    expect((await fetch(`${daemon.origin}/v1/models`)).status).toBe(401);
    expect((await fetch(`${daemon.origin}/v1/models`, { headers: { authorization: `Bearer ${LAPTOP}` } })).status).toBe(200);
  });
});

describe('llmtray serve on a network address without a client key', () => {
  it.each([
    ['--host 0.0.0.0 with a config that has no key', (data: string, config: string) => ['serve', '--config', config, '--host', '0.0.0.0', '--data-dir', data, '--port', '0'], 'add one under listen.clientKeys in'],
    ['listen.host in the config, no key', (data: string, config: string) => ['serve', '--config', `${config}.host`, '--data-dir', data, '--port', '0'], `listen.host "${LAN}" in`],
    ['--demo with --host', (data: string) => ['serve', '--demo', '--host', '0.0.0.0', '--data-dir', data, '--port', '0'], 'run the demo on 127.0.0.1 (drop --host)'],
  ])('%s: exits 1 with the sentence naming what to set, and leaves nothing behind', async (_name, args, expected) => {
    const data = await makeDataDir();
    const config = join(dir, 'no-keys.yaml');
    try {
      await writeFile(config, 'modelDirs: []\n');
      await writeFile(`${config}.host`, `listen:\n  host: ${LAN}\nmodelDirs: []\n`);
      const result = await runCli(args(data, config));
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('no client key');
      expect(result.stderr).toContain(expected);
      expect(existsSync(join(data, 'daemon.json'))).toBe(false);
      expect(existsSync(join(data, 'daemon.lock'))).toBe(false);
    } finally {
      await removeDataDir(data);
    }
  });
});
