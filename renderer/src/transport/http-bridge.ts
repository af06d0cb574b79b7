// The dashboard bridge over HTTP + SSE, for the headless daemon (`llmtray serve`) in a browser.
//
// Every call of the route table goes through the admin HTTP client that the CLI uses too
// (core/admin-client/admin-http-client.ts), with the admin token as `Authorization: Bearer` on
// each request, the event stream's included. No cookie: core/admin/admin-auth.ts says why, and
// why the token comes from the address's fragment and stays in this tab's sessionStorage.
//
// A 401 means the daemon does not know this token (its token file was replaced, or something
// else answers on this port): the bridge forgets the token, so it is not sent again, and
// reports `onAuthRequired`; the dashboard tells the person to open the URL `llmtray serve`
// prints, or to run `llmtray dashboard`.
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import { createAdminHttpApi, openAdminEvents, type AdminHttpOptions } from '../../../core/admin-client/admin-http-client.js';
import { ADMIN_CALL_NAMES, AdminRefusal, type AdminApi } from '../../../core/contracts/admin-routes.js';
import type { DashboardBridge } from '../../../core/contracts/bridge.js';
import { readEventStream } from '../../../core/admin-client/event-stream-reader.js';

/** The sentence the dashboard shows when the daemon refuses this page. */
export const AUTH_REQUIRED_MESSAGE =
  "This page does not have llmtray's admin token. Open the dashboard from the URL that `llmtray serve` prints, or run `llmtray dashboard`.";

/** sessionStorage key of the remembered admin token. */
export const TOKEN_STORAGE_KEY = 'llmtray.adminToken';

/** The daemon refused the request: this tab has no token, or not the daemon's. */
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
  /** Told each time the daemon refuses this page for want of its token. */
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
    // Storage can be disabled by the browser's settings; the token then lives until a reload.
    return null;
  }
}

export function createHttpBridge(env: HttpBridgeEnvironment): DashboardBridge {
  const initialDelay = env.reconnectInitialMs ?? 500;
  const maxDelay = env.reconnectMaxMs ?? 10_000;
  const staleAfterMs = env.staleAfterMs ?? 45_000;

  const urlToken = env.takeUrlToken();
  if (urlToken !== null) env.storage?.setItem(TOKEN_STORAGE_KEY, urlToken);
  // The fragment's token, or the one this tab remembered before a reload. Kept here as well as
  // in storage so that a tab without storage still works until it reloads.
  let token: string | null = urlToken ?? env.storage?.getItem(TOKEN_STORAGE_KEY) ?? null;
  const http: AdminHttpOptions = { baseUrl: env.baseUrl, fetch: env.fetch, token: () => token };
  const api = createAdminHttpApi(http);

  /** Turns a 401 into AuthRequiredError, forgetting the token the daemon does not accept. */
  const authorized = <T>(request: Promise<T>): Promise<T> =>
    request.catch((error: unknown) => {
      if (!(error instanceof AdminRefusal) || error.status !== 401) throw error;
      token = null;
      env.storage?.removeItem(TOKEN_STORAGE_KEY);
      env.onAuthRequired?.(AUTH_REQUIRED_MESSAGE);
      throw new AuthRequiredError();
    });

  const calls = Object.fromEntries(
    ADMIN_CALL_NAMES.map((name) => [name, (...args: unknown[]) => authorized((api[name] as (...a: unknown[]) => Promise<unknown>)(...args))]),
  ) as unknown as AdminApi;

  return {
    ...calls,

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
          try {
            const response = await authorized(openAdminEvents(http, connection.signal));
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
            // Refused for want of the token: the store shows that, not "reconnecting", and
            // trying again cannot help, since only a new page address brings a token.
            if (error instanceof AuthRequiredError) break;
          } finally {
            clearTimeout(staleTimer);
            stop.signal.removeEventListener('abort', abortConnection);
          }
          if (stop.signal.aborted) break;
          report(false);
          await sleep(delay, stop.signal);
          delay = Math.min(delay * 2, maxDelay);
        }
      })();

      return () => stop.abort();
    },
  };
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
