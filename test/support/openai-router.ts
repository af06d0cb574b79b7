// What the router's integration tests through the official `openai` client share
// (test/integration/router.test.ts, router-activation, router-engine-faults, router-http): routers
// on a scripted gateway over the shared fake engine (scripted-router.ts), an SDK client for each,
// and the raw requests the SDK will not send. One file, so the four split by what they test
// start their routers and read their refusals the same way.
import http from 'node:http';
import OpenAI, { APIError } from 'openai';
import { LOOPBACK_ONLY_ACCESS, type RouterAccess, type RouterOptions } from '../../core/router/router.js';
import type { FakeEngine } from './router-fake-engine.js';
import type { ScriptedGateway, scriptedModels } from './scripted-gateway.js';
import { scriptedRouterHarness } from './scripted-router.js';

export interface OpenAIRouters {
  /** The file's shared fake engine. */
  readonly engine: FakeEngine;
  /** The key the gateway hands the router for the engine, and the engine demands. */
  readonly engineKey: string;
  /** Where the fake engine listens; only once it started (in a test or a later hook). */
  readonly engineUrl: string;
  /** A router over a scripted gateway, with an `openai` client for it; closed after the test. */
  startRouter(
    options?: Partial<RouterOptions>,
    overrides?: Parameters<typeof scriptedModels>[0],
    listen?: { host?: string; clientKey?: string },
  ): Promise<{ url: string; port: number; gateway: ScriptedGateway; client: OpenAI }>;
}

/** Called once at a file's top level: registers the harness's hooks (scriptedRouterHarness). */
export function openAIRouters(): OpenAIRouters {
  const routers = scriptedRouterHarness();
  return {
    engine: routers.engine,
    engineKey: routers.engineKey,
    get engineUrl() {
      return routers.engineUrl;
    },
    async startRouter(options = {}, overrides = {}, listen = {}) {
      const { router, gateway } = await routers.start(overrides, options, { host: listen.host });
      const client = new OpenAI({ apiKey: listen.clientKey ?? 'client-own-key', baseURL: router.url, maxRetries: 0 });
      return { url: router.url, port: router.port, gateway, client };
    },
  };
}

/** Access with these settings, the rest as on a loopback listener. */
export function access(settings: Partial<RouterAccess>): () => RouterAccess {
  return () => ({ ...LOOPBACK_ONLY_ACCESS, ...settings });
}

/** A raw request, for what the SDK will not send (a hostile Host, broken JSON, chunked bodies). */
export function rawRequest(
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer[]; host?: string },
): Promise<{ status: number; headers: http.IncomingHttpHeaders; json: { error?: { message: string; param: string | null; code: string | null } } }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: options.host ?? '127.0.0.1', port, method: options.method ?? 'POST', path: options.path, headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text === '' ? {} : JSON.parse(text) });
      });
    });
    req.on('error', reject);
    if (Array.isArray(options.body)) for (const part of options.body) req.write(part);
    else if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

/** The APIError a request fails with; throws when it succeeds or fails otherwise. */
export async function caught(promise: Promise<unknown>): Promise<APIError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof APIError) return error;
    throw error;
  }
  throw new Error('expected the request to fail');
}

export const hello = [{ role: 'user' as const, content: 'hello' }];
