// Clients made for llama.cpp's router mode, through the router: real HTTP on loopback to a real
// HTTP fake engine (test/support/router-fake-engine.ts) with the scripted gateway. Each /v1/models
// entry carries router mode's `status`; POST /models/load and /models/unload run the tray's
// commands, guarded as the generation routes are; llama-server's own routes go, by the body's
// `model`, to an engine that serves them, and are refused by name where the engine does not.
import http from 'node:http';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { CommandResult } from '../../core/contracts/commands.js';
import { LOOPBACK_ONLY_ACCESS, type RouterOptions } from '../../core/router/router.js';
import type { ScriptedGateway, ScriptedModel } from '../support/scripted-gateway.js';
import { scriptedRouterHarness } from '../support/scripted-router.js';

const routers = scriptedRouterHarness();
const { engine, engineKey } = routers;

/** The commands the daemon would run, recorded. */
function recordingCommands(): { calls: string[]; commands: NonNullable<RouterOptions['modelCommands']> } {
  const calls: string[] = [];
  const run = (verb: string) => async (id: string): Promise<CommandResult> => {
    calls.push(`${verb}:${id}`);
    return id === 'broken' ? { ok: false, message: `${id} is quarantined; retry it first` } : { ok: true, message: `${id} ${verb}ed` };
  };
  return { calls, commands: { load: run('load'), unload: run('unload') } };
}

async function startRouter(options: Partial<RouterOptions> = {}, overrides: Partial<Record<string, Partial<ScriptedModel>>> = {}): Promise<{ origin: string; gateway: ScriptedGateway }> {
  const { origin, gateway } = await routers.start(overrides, options);
  return { origin, gateway };
}

async function post(origin: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** POST with a chosen Host header, which fetch will not set. */
function postWithHost(origin: string, path: string, host: string, body: unknown): Promise<number> {
  const { port } = new URL(origin);
  return new Promise((done, fail) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers: { host, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
    });
    req.on('error', fail);
    req.end(JSON.stringify(body));
  });
}

describe('llama.cpp router mode', () => {
  it('gives each /v1/models entry router mode’s status object, failed for a quarantined model', async () => {
    const { origin } = await startRouter();
    const client = new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'k', maxRetries: 0 });
    const entries = (await client.models.list()).data as unknown as { id: string; status: unknown }[];
    const status = (id: string): unknown => entries.find((e) => e.id === id)?.status;
    expect(status('small')).toEqual({ value: 'loaded' });
    expect(status('cold')).toEqual({ value: 'unloaded' });
    expect(status('broken')).toEqual({ value: 'unloaded', failed: true });
    expect(((await client.models.retrieve('small')) as unknown as { status: unknown }).status).toEqual({ value: 'loaded' });
  });

  it('runs the tray’s load and unload for POST /models/load and /models/unload, by name or alias', async () => {
    const { calls, commands } = recordingCommands();
    const { origin } = await startRouter({ modelCommands: commands });
    expect(await post(origin, '/models/load', { model: 'tiny' })).toEqual({ status: 200, json: { success: true, model: 'small', message: 'small loaded' } });
    expect((await post(origin, '/models/unload', { model: 'cold' })).status).toBe(200);
    expect(calls).toEqual(['load:small', 'unload:cold']);

    const refused = await post(origin, '/models/load', { model: 'broken' });
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ error: { message: 'broken is quarantined; retry it first', param: 'model' } });
    const unknown = await post(origin, '/models/load', { model: 'nope' });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({ error: { code: 'model_not_found' } });
    expect((await post(origin, '/models/load', {})).json).toMatchObject({ error: { param: 'model' } });
    expect(calls).toHaveLength(3);
  });

  it('guards the model commands as the generation routes: the Host check and client keys', async () => {
    const { calls, commands } = recordingCommands();
    const keys = [{ name: 'editor', key: 'router-secret-0123' }];
    const { origin } = await startRouter({ modelCommands: commands, access: () => ({ ...LOOPBACK_ONLY_ACCESS, clientKeys: keys }) });
    expect(await postWithHost(origin, '/models/load', 'evil.example', { model: 'small' })).toBe(403);
    expect((await post(origin, '/models/unload', { model: 'small' })).status).toBe(401);
    expect((await post(origin, '/models/unload', { model: 'small' }, { authorization: 'Bearer router-secret-0123' })).status).toBe(200);
    expect(calls).toEqual(['unload:small']);
  });
});

describe('llama-server’s own routes', () => {
  it('routes them by the body’s model to an engine that serves them, with the engine’s key', async () => {
    const { origin } = await startRouter();
    const from = engine.requests.length;
    const tokenized = await post(origin, '/tokenize', { model: 'tiny', content: 'ab' });
    expect(tokenized).toEqual({ status: 200, json: { tokens: [97, 98] } });
    expect((await post(origin, '/completion', { model: 'small', prompt: 'hi' })).status).toBe(200);
    const seen = engine.since(from);
    expect(seen.map((r) => r.path)).toEqual(['/tokenize', '/completion']);
    expect(seen[0]?.authorization).toBe(`Bearer ${engineKey}`);
  });

  it('refuses a route the model’s engine does not serve with a 404 naming the model and its engine, sending nothing', async () => {
    const { origin } = await startRouter({}, { small: { engine: 'embedded' } });
    const from = engine.requests.length;
    const refused = await post(origin, '/infill', { model: 'small', input_prefix: 'a', input_suffix: 'b' });
    expect(refused.status).toBe(404);
    const message = String((refused.json['error'] as { message: string }).message);
    expect(message).toContain("'small'");
    expect(message).toContain('embedded engine');
    expect(message).toContain('/tokenize');
    expect(engine.since(from)).toEqual([]);
    // What it does serve still goes through.
    expect((await post(origin, '/apply-template', { model: 'small', messages: [{ role: 'user', content: 'x' }] })).status).toBe(200);
  });

  it('refuses a body without a model, which it cannot route, naming the field', async () => {
    const { origin } = await startRouter();
    const refused = await post(origin, '/tokenize', { content: 'ab' });
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ error: { param: 'model' } });
  });
});
