// The admin API over HTTP, as its clients call it: the dashboard's HTTP bridge in a browser
// and the CLI in Node. Built from the route table (admin-routes.ts), so both ask for the same
// paths with the same method and read the answers the same way. Globals only (fetch, Headers)
// and core/contracts' words, so a browser, Electron and Node run it alike; here and not in
// core/contracts because it does I/O, and the contracts are words, not code that talks.
//
// The admin token travels in `Authorization: Bearer` on every request, the event stream's
// included, and in nothing else: no cookie, since a browser sends a cookie for 127.0.0.1 to
// every port on it, so any other local server would receive it (core/admin/admin-auth.ts).
import type { AdminErrorBody } from '../contracts/commands.js';
import { ADMIN_EVENTS_PATH, ADMIN_ROUTES, AdminRefusal, pathFor, type AdminApi, type AdminArgs, type AdminCallName, type AdminAnswer } from '../contracts/admin-routes.js';
import { errorMessage } from '../contracts/error-message.js';

export interface AdminHttpOptions {
  /** Where the daemon is: '' for the page's own origin, or an origin like http://127.0.0.1:11435. */
  baseUrl: string;
  fetch: typeof fetch;
  /** The admin token to send now, or null when there is none (the daemon then refuses with 401). */
  token: () => string | null;
}

/** Every call of the route table over HTTP. Rejects with AdminRefusal when refused, an Error when unreachable. */
export function createAdminHttpApi(options: AdminHttpOptions): AdminApi {
  const call = <K extends AdminCallName>(name: K) =>
    async (...args: AdminArgs<K>): Promise<AdminAnswer<K>> => {
      const route = ADMIN_ROUTES[name];
      const path = pathFor(name, ...args);
      const response = await send(options, path, { method: route.method });
      const body: unknown = await response.json().catch(() => undefined);
      const refusal = refusalOf(body, response.status, `${route.method} ${path}`);
      if (refusal !== null) throw refusal;
      // A call whose answers say "no" themselves (runCommand: 404, 409, 500) answers with any status.
      if (!response.ok && route.status === undefined) throw new AdminRefusal(response.status, 'unexpected_answer', `${route.method} ${path} answered HTTP ${response.status}.`);
      return body as AdminAnswer<K>;
    };
  const api = {} as Record<AdminCallName, unknown>;
  for (const name of Object.keys(ADMIN_ROUTES) as AdminCallName[]) api[name] = call(name);
  return api as AdminApi;
}

/**
 * Opens the event stream; resolves with the response once the daemon accepted it (read its
 * body with readEventStream). Rejects like a call: AdminRefusal when refused, an Error when
 * the daemon is unreachable or `signal` aborted.
 */
export async function openAdminEvents(options: AdminHttpOptions, signal: AbortSignal): Promise<Response & { body: ReadableStream<Uint8Array> }> {
  const response = await send(options, ADMIN_EVENTS_PATH, { method: 'GET', headers: { accept: 'text/event-stream' }, signal });
  if (!response.ok || response.body === null) {
    const body: unknown = await response.json().catch(() => undefined);
    throw refusalOf(body, response.status, `GET ${ADMIN_EVENTS_PATH}`) ?? new AdminRefusal(response.status, 'unexpected_answer', `GET ${ADMIN_EVENTS_PATH} answered HTTP ${response.status}.`);
  }
  return response as Response & { body: ReadableStream<Uint8Array> };
}

async function send(options: AdminHttpOptions, path: string, init: RequestInit): Promise<Response> {
  const headers = new Headers(init.headers);
  const token = options.token();
  if (token !== null) headers.set('authorization', `Bearer ${token}`);
  try {
    // Every admin answer says `cache-control: no-store`, so no browser cache stands in for the daemon.
    return await options.fetch(`${options.baseUrl}${path}`, { ...init, headers });
  } catch (error) {
    if (init.signal?.aborted) throw error;
    const where = options.baseUrl === '' ? 'the llmtray daemon' : `the llmtray daemon at ${options.baseUrl}`;
    throw new Error(`cannot reach ${where} (${errorMessage(error)}); is it running (\`llmtray serve\`)?`);
  }
}

/** The AdminRefusal an AdminErrorBody stands for, or null when the body is not one. */
function refusalOf(body: unknown, status: number, what: string): AdminRefusal | null {
  const error = (body as Partial<AdminErrorBody> | null | undefined)?.error;
  if (typeof error !== 'object' || error === null) return null;
  const message = typeof error.message === 'string' ? error.message : `${what} answered HTTP ${status}.`;
  return new AdminRefusal(status, typeof error.code === 'string' ? error.code : 'unknown', message);
}
