// Who may use the admin API: whoever sends the admin token in `Authorization: Bearer`. Nothing
// else opens it: no cookie, no query parameter.
//
// Why no cookie: a browser sends a cookie set by 127.0.0.1 to every server on 127.0.0.1,
// whatever its port, so a dev server, another user's app or anything else listening on
// loopback would receive a credential for this API (the session cookie we once had did exactly
// that). And the reason we had one, "EventSource cannot set headers", is gone: the dashboard
// and the CLI read the event stream over fetch (core/admin-client/event-stream-reader.ts), which
// sends the header like any request.
//
// How the browser gets the token, and where the tab keeps it:
// 1. The daemon (or `llmtray dashboard`) prints `http://127.0.0.1:PORT/#token=<TOKEN>`. The
//    token rides in the fragment, which browsers never send to a server, so it lands in no
//    request line, no access log and no Referer. A `?token=` query would.
// 2. The page reads the fragment and removes it with `history.replaceState`, so it is not left
//    in the address bar, a bookmark or the history entry.
// 3. The tab keeps the token in sessionStorage and sends it as a Bearer header on every
//    request (renderer/src/transport/http-bridge.ts). sessionStorage, because it belongs to
//    one origin, port included, where a cookie belongs to a host: no other server on
//    127.0.0.1 can read it or be sent it. It belongs to this tab only and ends with it, so the
//    token is in no other tab, and not on disk after the browser closes, as localStorage's
//    would be. And it outlives a reload, which a variable does not: without it every reload
//    would need the printed URL again. What it does not stop: a script running in the
//    dashboard's own origin could read it, which the dashboard's CSP (script-src 'self', no
//    inline script) is there to prevent; and such a script could use the API through the
//    page anyway, token or not.
//
// Deleting DATA_DIR/admin-token and restarting revokes every tab: the next request answers
// 401, and the tab forgets the token it had and asks for the printed URL again.
import type { IncomingMessage } from 'node:http';
import { bearerOf, constantTimeEquals } from '../common/credentials.js';

export interface AdminAuth {
  /** Whether the request carries the admin token in `Authorization: Bearer`. Pure, constant-time in the secret. */
  authorized(req: IncomingMessage): boolean;
}

export function createAdminAuth(token: string): AdminAuth {
  return {
    authorized(req) {
      const presented = bearerOf(req);
      return presented !== undefined && constantTimeEquals(presented, token);
    },
  };
}
