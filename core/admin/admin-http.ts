// The admin service over HTTP: the CLI's and the headless dashboard's transport.
//
// Mounted as the router's `fallthrough`, so the router's Host (DNS rebinding) and Origin
// (cross-site POST) guards have already run for every request that reaches it; this handler
// adds the admin token (`Authorization: Bearer`, nothing else: admin-auth.ts). Routes:
//
//   the calls of ADMIN_ROUTES        core/contracts/admin-routes.ts: GET /api/state,
//                                    POST /api/models/:id/:command, GET /api/models/:id/logs,
//                                    the pulls under /api/downloads
//                                    GET /api/activity?model=&status=&client=
//   GET    /api/events               SSE: SnapshotUpdated first, then every AdminEvent
//   GET    /metrics                  Prometheus text; no token by default (see below)
//   GET    anything else             the dashboard's files
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ADMIN_EVENTS_PATH, AdminRefusal, answerStatus, callAdmin, parseParams } from '../contracts/admin-routes.js';
import { createAdminAuth } from './admin-auth.js';
import type { AdminClock, AdminService } from './admin-service.js';
import { realClock } from '../common/clock.js';
import { DEFAULT_HEARTBEAT_MS, openEventStream } from './event-stream.js';
import { METRICS_CONTENT_TYPE, renderMetrics } from './metrics.js';
import type { RequestHistograms } from './request-histograms.js';
import { BASE_HEADERS, sendAdminError, sendJson } from './replies.js';
import { matchAdminRoute } from './route-match.js';
import { serveStatic } from './static-files.js';
import { pathOf } from '../common/url-path.js';
import { errorMessage } from '../contracts/error-message.js';

/**
 * Who may scrape /metrics.
 * - 'open' (default): anyone who reaches the loopback listener. Prometheus scrape configs
 *   rarely carry a per-install secret, and the page holds no secret: model ids, states and
 *   byte counts, which `GET /v1/models` already lists to the same callers. No engine's
 *   endpoint is in it, and no engine's key is in any answer at all.
 * - 'token': the same Bearer token as /api, for people who share the machine.
 */
export type MetricsAccess = 'open' | 'token';

export interface AdminHandlerOptions {
  service: AdminService;
  /** The admin token (ensureAdminToken). */
  token: string;
  /** The built dashboard (e.g. dist/renderer); may not exist yet. */
  staticDir?: string;
  metrics?: MetricsAccess;
  /** What requests cost, for /metrics' request histograms; absent: the page has none. */
  requestMetrics?: RequestHistograms;
  /** Drives the SSE heartbeat. Default: real timers. */
  clock?: AdminClock;
  /** Default 15 s. */
  heartbeatMs?: number;
}

export type AdminHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** The request handler for everything outside /v1. Never throws: a failure is a 500 answer. */
export function createAdminHandler(options: AdminHandlerOptions): AdminHandler {
  const { service } = options;
  const auth = createAdminAuth(options.token);
  const metricsAccess = options.metrics ?? 'open';
  const stream = { clock: options.clock ?? realClock, heartbeatMs: options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS };

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = pathOf(req.url);
    const method = req.method ?? '';
    if (path === '/metrics') {
      if (metricsAccess === 'token' && !auth.authorized(req)) return refuseUnauthenticated(res);
      if (method !== 'GET' && method !== 'HEAD') return wrongMethod(res, path, 'GET');
      const text = renderMetrics(service.snapshot(), options.requestMetrics?.models());
      res.writeHead(200, { ...BASE_HEADERS, 'content-type': METRICS_CONTENT_TYPE, 'content-length': String(Buffer.byteLength(text)) });
      return void res.end(method === 'HEAD' ? undefined : text);
    }
    if (path !== '/api' && !path.startsWith('/api/')) return serveStatic(req, res, path, options.staticDir);
    if (!auth.authorized(req)) return refuseUnauthenticated(res);

    if (path === ADMIN_EVENTS_PATH) {
      if (method !== 'GET') return wrongMethod(res, path, 'GET');
      return openEventStream(req, res, service, stream);
    }
    const match = matchAdminRoute(method, path);
    if (match.kind === 'wrong_method') return wrongMethod(res, path, match.allowed);
    if (match.kind === 'none') {
      return sendAdminError(res, 404, 'not_found', `Unknown admin route ${method} ${path}; see core/admin/README.md for the routes.`);
    }
    const answer = await callAdmin(service, match.name, parseParams(match.name, { ...queryOf(req.url), ...match.raw }));
    sendJson(res, answerStatus(match.name, answer), answer);
  }

  return (req, res) => {
    route(req, res).catch((error: unknown) => {
      if (error instanceof AdminRefusal) return sendAdminError(res, error.status, error.code, error.message);
      if (!res.headersSent) {
        sendAdminError(res, 500, 'internal_error', `llmtray's admin API failed on ${req.method ?? ''} ${pathOf(req.url)}: ${errorMessage(error)}`);
      } else {
        res.destroy();
      }
    });
  };
}

/** The query's parameters (a call's parameters that its path does not name; parseParams refuses any it does not take). */
function queryOf(url: string | undefined): Record<string, string> {
  const at = url?.indexOf('?') ?? -1;
  if (url === undefined || at === -1) return {};
  return Object.fromEntries(new URLSearchParams(url.slice(at + 1)));
}

function refuseUnauthenticated(res: ServerResponse): void {
  sendAdminError(
    res,
    401,
    'unauthorized',
    "The admin API needs llmtray's admin token: send `Authorization: Bearer <token>` with the token from DATA_DIR/admin-token, or open the dashboard through the URL `llmtray serve` prints (or `llmtray dashboard`).",
    { 'www-authenticate': 'Bearer realm="llmtray"' },
  );
}

function wrongMethod(res: ServerResponse, path: string, allowed: string): void {
  sendAdminError(res, 405, 'method_not_allowed', `${path} accepts ${allowed} only.`, { allow: allowed });
}
