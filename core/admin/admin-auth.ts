// Who may use the admin API: whoever holds the admin token (the CLI sends it as a Bearer
// header), or a browser tab that exchanged it for the session cookie.
//
// The hand-over to the browser, and why each part is the way it is:
// 1. The daemon (or `llmtray dashboard`) prints/opens `http://127.0.0.1:PORT/#token=<TOKEN>`.
//    The token rides in the fragment, which browsers never send to the server, so it lands in
//    no request line, no access log and no Referer. A `?token=` query would.
// 2. The page reads the fragment, sends `POST /api/session` with `Authorization: Bearer
//    <TOKEN>`, and removes the fragment with `history.replaceState`, so it is not left in the
//    address bar or the history entry.
// 3. The answer sets an HttpOnly, SameSite=Strict cookie. HttpOnly: script (an XSS in a log
//    line, say) cannot read it. SameSite=Strict: no other site can make the browser send it,
//    so a cross-site POST to /api/models/x/unload arrives without credentials (the router's
//    Origin check refuses it as well). A cookie at all: EventSource cannot set headers.
//
// The cookie value is not the token but HMAC(token, "dashboard session"). Cookies ignore
// ports, so the browser also sends it to any other server on 127.0.0.1, possibly another
// user's; a derived value opens this API but does not reveal the token file's content, and it
// needs no server-side session table, so a tab keeps working across a daemon restart.
// Deleting DATA_DIR/admin-token revokes every session. The cookie's name carries the port, so
// two daemons on one machine (different data dirs) do not overwrite each other's session.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export type Credential = 'bearer' | 'cookie';

export interface AdminAuth {
  /** How the request proved it holds the token, or null when it did not. Pure, constant-time in the secret. */
  credential(req: IncomingMessage): Credential | null;
  /** Whether the request carries the token itself in `Authorization: Bearer` (what POST /api/session requires). */
  hasBearerToken(req: IncomingMessage): boolean;
  /** The Set-Cookie value that opens a dashboard session for this request's host and port. */
  sessionCookie(req: IncomingMessage): string;
  /** The Set-Cookie value that ends it. */
  clearedCookie(req: IncomingMessage): string;
}

export const SESSION_COOKIE_PREFIX = 'llmtray_session_';

export function createAdminAuth(token: string): AdminAuth {
  const session = createHmac('sha256', token).update('llmtray dashboard session v1').digest('hex');
  const hasBearerToken = (req: IncomingMessage): boolean => {
    const presented = bearerOf(req);
    return presented !== undefined && constantTimeEquals(presented, token);
  };
  const hasSessionCookie = (req: IncomingMessage): boolean =>
    cookieValues(req, cookieName(req)).some((value) => constantTimeEquals(value, session));
  const attributes = 'Path=/; HttpOnly; SameSite=Strict';
  return {
    credential: (req) => (hasBearerToken(req) ? 'bearer' : hasSessionCookie(req) ? 'cookie' : null),
    hasBearerToken,
    sessionCookie: (req) => `${cookieName(req)}=${session}; ${attributes}`,
    clearedCookie: (req) => `${cookieName(req)}=; ${attributes}; Max-Age=0`,
  };
}

function bearerOf(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined || !/^bearer /i.test(header)) return undefined;
  return header.slice('bearer '.length).trim();
}

/** `llmtray_session_<port>`; the router has already refused any Host that is not loopback. */
function cookieName(req: IncomingMessage): string {
  let port = '80';
  try {
    port = new URL(`http://${req.headers.host ?? ''}`).port || '80';
  } catch {
    // An unparsable Host cannot match any cookie we set; the default name is as good as any.
  }
  return `${SESSION_COOKIE_PREFIX}${port}`;
}

function cookieValues(req: IncomingMessage, name: string): string[] {
  const header = req.headers.cookie;
  if (header === undefined) return [];
  return header
    .split(';')
    .map((pair) => pair.trim())
    .filter((pair) => pair.startsWith(`${name}=`))
    .map((pair) => pair.slice(name.length + 1));
}

/** Equality whose time depends on neither where the strings differ nor their lengths. */
function constantTimeEquals(a: string, b: string): boolean {
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(a), digest(b));
}
