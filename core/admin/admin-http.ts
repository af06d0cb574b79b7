// The admin service over HTTP: the CLI's and the headless dashboard's transport.
//
// Mounted as the router's `fallthrough`, so the router's Host (DNS rebinding) and Origin
// (cross-site POST) guards have already run for every request that reaches it; this handler
// adds the admin token. Route table:
//
//   POST   /api/session               Bearer token -> session cookie (see admin-auth.ts)
//   DELETE /api/session               ends the session (clears the cookie)
//   GET    /api/state                 Snapshot
//   GET    /api/events                SSE: SnapshotUpdated first, then every AdminEvent
//   POST   /api/models/:id/:command   CommandResult (pin | unpin | load | unload | retry)
//   GET    /api/models/:id/logs       ModelLogsResponse
//   GET    /metrics                   Prometheus text; no token by default (see below)
//   GET    anything else              the dashboard's files
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CommandResult, ModelLogsResponse } from '../contracts/commands.js';
import { createAdminAuth } from './admin-auth.js';
import type { AdminClock, AdminService } from './admin-service.js';
import { realClock } from '../common/clock.js';
import { DEFAULT_HEARTBEAT_MS, openEventStream } from './event-stream.js';
import { METRICS_CONTENT_TYPE, renderMetrics } from './metrics.js';
import { BASE_HEADERS, sendAdminError, sendJson } from './replies.js';
import { serveStatic } from './static-files.js';
import { pathOf } from '../common/url-path.js';

/**
 * Who may scrape /metrics.
 * - 'open' (default): anyone who reaches the loopback listener. Prometheus scrape configs
 *   rarely carry a per-install secret, and the page holds no secret: model ids, states and
 *   byte counts, which `GET /v1/models` already lists to the same callers. The engines'
 *   endpoints and keys are in the snapshot, never in the metrics.
 * - 'token': the same Bearer token (or session) as /api, for people who share the machine.
 */
export type MetricsAccess = 'open' | 'token';

export interface AdminHandlerOptions {
  service: AdminService;
  /** The admin token (ensureAdminToken). */
  token: string;
  /** The built dashboard (e.g. dist/renderer); may not exist yet. */
  staticDir?: string;
  metrics?: MetricsAccess;
  /** Drives the SSE heartbeat. Default: real timers. */
  clock?: AdminClock;
  /** Default 15 s. */
  heartbeatMs?: number;
}

export type AdminHandler = (req: IncomingMessage, res: ServerResponse) => void;

const MODEL_ROUTE = /^\/api\/models\/([^/]+)\/([^/]+)$/;

/** The request handler for everything outside /v1. Never throws: a failure is a 500 answer. */
export function createAdminHandler(options: AdminHandlerOptions): AdminHandler {
  const { service } = options;
  const auth = createAdminAuth(options.token);
  const metricsAccess = options.metrics ?? 'open';
  const stream = { clock: options.clock ?? realClock, heartbeatMs: options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS };

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = pathOf(req.url);
    if (path === '/metrics') {
      if (metricsAccess === 'token' && auth.credential(req) === null) return refuseUnauthenticated(res);
      if (req.method !== 'GET' && req.method !== 'HEAD') return wrongMethod(res, path, 'GET');
      const text = renderMetrics(service.snapshot());
      res.writeHead(200, { ...BASE_HEADERS, 'content-type': METRICS_CONTENT_TYPE, 'content-length': String(Buffer.byteLength(text)) });
      return void res.end(req.method === 'HEAD' ? undefined : text);
    }
    if (path !== '/api' && !path.startsWith('/api/')) return serveStatic(req, res, path, options.staticDir);

    if (path === '/api/session') return session(req, res);
    if (auth.credential(req) === null) return refuseUnauthenticated(res);

    if (path === '/api/state') {
      if (req.method !== 'GET') return wrongMethod(res, path, 'GET');
      return sendJson(res, 200, service.snapshot());
    }
    if (path === '/api/events') {
      if (req.method !== 'GET') return wrongMethod(res, path, 'GET');
      return openEventStream(req, res, service, stream);
    }
    const model = MODEL_ROUTE.exec(path);
    if (model !== null) {
      const id = decodeSegment(model[1] ?? '');
      const verb = model[2] ?? '';
      if (id === null) return sendAdminError(res, 400, 'bad_model_id', `The model id in ${path} is not valid percent-encoding.`);
      if (verb === 'logs') {
        if (req.method !== 'GET') return wrongMethod(res, path, 'GET');
        const found = service.logs(id);
        if (!found.found) return sendAdminError(res, 404, 'unknown_model', found.message);
        return sendJson(res, 200, { modelId: found.modelId, lines: found.lines, next: found.next } satisfies ModelLogsResponse);
      }
      if (req.method !== 'POST') return wrongMethod(res, path, 'POST');
      const result = await service.run(verb, id);
      return sendJson(res, commandStatus(result), result);
    }
    sendAdminError(res, 404, 'not_found', `Unknown admin route ${req.method ?? ''} ${path}; see core/admin/README.md for the routes.`);
  }

  function session(req: IncomingMessage, res: ServerResponse): void {
    if (req.method === 'DELETE') return void sendJson(res, 200, { ok: true }, { 'set-cookie': auth.clearedCookie(req) });
    if (req.method !== 'POST') return wrongMethod(res, '/api/session', 'POST, DELETE');
    // Only the token itself opens a session: a cookie cannot renew itself, so revoking the
    // token (deleting the file) ends every session at the next restart.
    if (!auth.hasBearerToken(req)) return refuseUnauthenticated(res);
    sendJson(res, 200, { ok: true }, { 'set-cookie': auth.sessionCookie(req) });
  }

  return (req, res) => {
    route(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        sendAdminError(res, 500, 'internal_error', `llmtray's admin API failed on ${req.method ?? ''} ${pathOf(req.url)}: ${error instanceof Error ? error.message : String(error)}`);
      } else {
        res.destroy();
      }
    });
  };
}

/** 200 done, 409 declined by the action, 400/404/500 by the code. */
export function commandStatus(result: CommandResult): number {
  if (result.ok) return 200;
  switch (result.code) {
    case 'unknown_command':
      return 400;
    case 'unknown_model':
      return 404;
    case 'action_failed':
      return 500;
    case undefined:
      return 409;
  }
}

function refuseUnauthenticated(res: ServerResponse): void {
  sendAdminError(
    res,
    401,
    'unauthorized',
    "The admin API needs llmtray's admin token: send `Authorization: Bearer <token>` with the token from DATA_DIR/admin-token, or open the dashboard through the URL the daemon prints.",
    { 'www-authenticate': 'Bearer realm="llmtray"' },
  );
}

function wrongMethod(res: ServerResponse, path: string, allowed: string): void {
  sendAdminError(res, 405, 'method_not_allowed', `${path} accepts ${allowed} only.`, { allow: allowed });
}

function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

