// The dashboard bridge over HTTP + SSE, for the headless daemon (`llmtray serve`) in a browser.
//
// Authentication, as core/admin/admin-auth.ts designs it: the daemon prints
// `http://127.0.0.1:PORT/#token=TOKEN`. The fragment never reaches the server or its logs. On
// start this bridge takes the token from the fragment, removes the fragment from the address
// bar, and exchanges the token for an HttpOnly SameSite=Strict session cookie with
// `POST /api/session` (Bearer). Every later request is same-origin and carries the cookie,
// which is also what lets the event stream authenticate.
//
// The token is remembered in sessionStorage (this tab only, gone when it closes; never
// localStorage, which every later tab and any script on the origin would read for good). When
// the daemon restarts it keeps its token file, but a request can still answer 401 (cookies
// cleared, another daemon took the port): the bridge then POSTs the remembered token once
// more and repeats the request. With no token at all it reports `onAuthRequired`, and the
// dashboard tells the person how to open a proper session.
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import type { DashboardBridge } from '../../../core/contracts/bridge.js';
import type { CommandResult, ModelCommand, ModelLogsResponse } from '../../../core/contracts/commands.js';
import type { LogTail } from '../../../core/contracts/log-lines.js';
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import { readEventStream } from '../../../core/contracts/event-stream-reader.js';

/** The sentence the dashboard shows when the daemon refuses this page. */
export const AUTH_REQUIRED_MESSAGE =
  "This page has no llmtray session. Open the dashboard from the URL that `llmtray serve` prints, or run `llmtray dashboard`.";

/** sessionStorage key of the remembered admin token. */
export const TOKEN_STORAGE_KEY = 'llmtray.adminToken';

/** The daemon refused the request and no remembered token could open a session. */
export class AuthRequiredError extends Error {
  constructor() {
    super(AUTH_REQUIRED_MESSAGE);
    this.name = 'AuthRequiredError';
  }
}

/** What the bridge needs from its surroundings; `browserHttpEnvironment` wires the real page. */
export interface HttpBridgeEnvironment {
  /** Where the daemon is: '' for the page's own origin (the normal case), or an absolute URL. */
  baseUrl: string;
  fetch: typeof fetch;
  /** Returns the token from the page address and removes it from there; null when there is none. Called once. */
  takeUrlToken(): string | null;
  /** The tab's token memory (sessionStorage); null where storage is unavailable. */
  storage: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> | null;
  /** Told each time the daemon refuses this page for want of a session. */
  onAuthRequired?: (message: string) => void;
  /** Reconnect delays of the event stream: first, and the most it grows to. Default 500 ms, 10 s. */
  reconnectInitialMs?: number;
  reconnectMaxMs?: number;
  /**
   * A stream silent this long is presumed dead (a laptop slept; a proxy dropped it without a
   * FIN) and is reopened. The daemon sends a heartbeat every 15 s. Default 45 s.
   */
  staleAfterMs?: number;
}

/** The token in a `#token=...` fragment (other fragment parameters are allowed), or null. */
export function tokenFromHash(hash: string): string | null {
  const token = new URLSearchParams(hash.replace(/^#/, '')).get('token');
  return token === null || token === '' ? null : token;
}

/** The environment of a real page: same origin, window.fetch, location, sessionStorage. */
export function browserHttpEnvironment(onAuthRequired?: (message: string) => void): HttpBridgeEnvironment {
  return {
    baseUrl: '',
    fetch: window.fetch.bind(window),
    takeUrlToken() {
      const token = tokenFromHash(window.location.hash);
      if (token !== null) {
        // Off the address bar and out of the history entry, so it is not shared by a screenshot,
        // a copied URL or the back button.
        window.history.replaceState(window.history.state, '', window.location.pathname + window.location.search);
      }
      return token;
    },
    storage: safeSessionStorage(),
    ...(onAuthRequired === undefined ? {} : { onAuthRequired }),
  };
}

function safeSessionStorage(): Storage | null {
  try {
    return window.sessionStorage;
  } catch {
    // Storage can be disabled by the browser's settings; the session cookie still works without it.
    return null;
  }
}

export function createHttpBridge(env: HttpBridgeEnvironment): DashboardBridge {
  const initialDelay = env.reconnectInitialMs ?? 500;
  const maxDelay = env.reconnectMaxMs ?? 10_000;
  const staleAfterMs = env.staleAfterMs ?? 45_000;
  const url = (path: string): string => `${env.baseUrl}${path}`;

  const urlToken = env.takeUrlToken();
  if (urlToken !== null) env.storage?.setItem(TOKEN_STORAGE_KEY, urlToken);
  // The fragment's token, or the one this tab remembered before a reload. Kept here as well as
  // in storage so that a tab without storage still re-opens its session after a restart.
  let token: string | null = urlToken ?? env.storage?.getItem(TOKEN_STORAGE_KEY) ?? null;

  let sessionAttempt: Promise<boolean> | null = null;
  /** POSTs the remembered token for a session cookie; concurrent callers share one attempt. */
  const openSession = (): Promise<boolean> => {
    sessionAttempt ??= (async () => {
      try {
        if (token === null) return false;
        const response = await env.fetch(url('/api/session'), {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
          credentials: 'same-origin',
        });
        await response.body?.cancel();
        if (response.status === 401) {
          // The daemon has a new token (its token file was deleted to revoke sessions): this
          // one will never work again, so stop presenting it.
          token = null;
          env.storage?.removeItem(TOKEN_STORAGE_KEY);
          return false;
        }
        return response.ok;
      } finally {
        sessionAttempt = null;
      }
    })();
    return sessionAttempt;
  };

  // Every request waits for the first session, so none races the cookie it needs.
  const started: Promise<unknown> = urlToken === null ? Promise.resolve() : openSession().catch(() => false);

  /** fetch with the session: on 401, one session re-POST and one repeat. Rejects AuthRequiredError when still refused. */
  const request = async (path: string, init: RequestInit = {}): Promise<Response> => {
    await started;
    const send = (): Promise<Response> => env.fetch(url(path), { ...init, credentials: 'same-origin', cache: 'no-store' });
    let response = await send();
    if (response.status === 401) {
      await response.body?.cancel();
      if (await openSession()) response = await send();
      if (response.status === 401) {
        await response.body?.cancel();
        env.onAuthRequired?.(AUTH_REQUIRED_MESSAGE);
        throw new AuthRequiredError();
      }
    }
    return response;
  };

  return {
    async getSnapshot() {
      const response = await request('/api/state');
      if (!response.ok) throw new Error(await refusal('GET /api/state', response));
      return (await response.json()) as Snapshot;
    },

    async runCommand(command: ModelCommand, modelId: string): Promise<CommandResult> {
      const path = `/api/models/${encodeURIComponent(modelId)}/${command}`;
      const response = await request(path, { method: 'POST' });
      const body: unknown = await response.json().catch(() => null);
      if (isCommandResult(body)) return body;
      // Not a CommandResult (a 405 or 500 from the transport itself): still an answer, not a transport failure.
      return { ok: false, message: adminErrorMessage(body) ?? `POST ${path} answered HTTP ${response.status}.` };
    },

    async getLogs(modelId: string): Promise<LogTail> {
      const path = `/api/models/${encodeURIComponent(modelId)}/logs`;
      const response = await request(path);
      if (!response.ok) throw new Error(await refusal(`GET ${path}`, response));
      const { lines, next } = (await response.json()) as ModelLogsResponse;
      return { lines, next };
    },

    subscribe(listener, onConnection) {
      const stop = new AbortController();
      let reported: boolean | null = null;
      const report = (connected: boolean): void => {
        if (reported === connected || stop.signal.aborted) return;
        reported = connected;
        onConnection?.(connected);
      };
      const deliver = (data: string): void => {
        let event: AdminEvent;
        try {
          event = JSON.parse(data) as AdminEvent;
        } catch {
          return; // A torn or foreign line: the next snapshot carries the whole state anyway.
        }
        if (typeof event !== 'object' || event === null || typeof event.type !== 'string' || stop.signal.aborted) return;
        try {
          listener(event);
        } catch {
          // A listener's bug must not kill the stream for everything after it.
        }
      };

      void (async () => {
        let delay = initialDelay;
        while (!stop.signal.aborted) {
          const connection = new AbortController();
          const abortConnection = (): void => connection.abort();
          stop.signal.addEventListener('abort', abortConnection, { once: true });
          let staleTimer: ReturnType<typeof setTimeout> | undefined;
          const alive = (): void => {
            clearTimeout(staleTimer);
            staleTimer = setTimeout(abortConnection, staleAfterMs);
          };
          let authRefused = false;
          try {
            const response = await request('/api/events', { headers: { accept: 'text/event-stream' }, signal: connection.signal });
            if (!response.ok || response.body === null) {
              await response.body?.cancel();
              throw new Error(`GET /api/events answered HTTP ${response.status}`);
            }
            alive();
            await readEventStream(
              response.body,
              (message) => {
                // Only a delivered event proves the daemon is really back; a server that
                // accepts and drops at once must not reset the backoff.
                delay = initialDelay;
                report(true);
                deliver(message.data);
              },
              alive,
            );
          } catch (error) {
            authRefused = error instanceof AuthRequiredError;
          } finally {
            clearTimeout(staleTimer);
            stop.signal.removeEventListener('abort', abortConnection);
          }
          if (stop.signal.aborted) break;
          // Refused for want of a session: the store shows that, not "reconnecting". Keep
          // trying slowly, since a session opened in another tab sets the cookie for this one.
          if (!authRefused) report(false);
          await sleep(authRefused ? maxDelay : delay, stop.signal);
          delay = Math.min(delay * 2, maxDelay);
        }
      })();

      return () => stop.abort();
    },
  };
}

function isCommandResult(value: unknown): value is CommandResult {
  return typeof value === 'object' && value !== null && typeof (value as CommandResult).ok === 'boolean' && typeof (value as CommandResult).message === 'string';
}

function adminErrorMessage(value: unknown): string | null {
  const error = (value as { error?: { message?: unknown } } | null)?.error;
  return typeof error?.message === 'string' ? error.message : null;
}

async function refusal(what: string, response: Response): Promise<string> {
  const body: unknown = await response.json().catch(() => null);
  return adminErrorMessage(body) ?? `${what} answered HTTP ${response.status}.`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
