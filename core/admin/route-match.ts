// Which call of the route table (core/contracts/admin-routes.ts) a request is for: the server's
// half of the table, where pathFor is the clients' half. Pure.
//
// A path can match several patterns (`/api/models/x/logs` is getLogs, and runCommand with the
// command "logs"): the one with more literal segments wins, so the answer to `POST .../logs`
// is "this path accepts GET" rather than "logs is not a command".
import { ADMIN_CALL_NAMES, ADMIN_ROUTES, AdminRefusal, type AdminCallName } from '../contracts/admin-routes.js';

export type RouteMatch =
  /** The call, with each `:name` segment percent-decoded (not yet checked: parseParams does that). */
  | { kind: 'call'; name: AdminCallName; raw: Record<string, string> }
  /** The path is a call's, the method is not. */
  | { kind: 'wrong_method'; allowed: string }
  | { kind: 'none' };

/** The call `method path` asks for. Throws AdminRefusal (400) for a segment that is not valid percent-encoding. */
export function matchAdminRoute(method: string, path: string): RouteMatch {
  const segments = path.split('/');
  let best: { name: AdminCallName; literals: number; raw: Record<string, string> } | null = null;
  for (const name of ADMIN_CALL_NAMES) {
    const pattern = ADMIN_ROUTES[name].path.split('/');
    if (pattern.length !== segments.length) continue;
    let literals = 0;
    const raw: Record<string, string> = {};
    const matches = pattern.every((part, i) => {
      const segment = segments[i] ?? '';
      if (!part.startsWith(':')) {
        literals += part === segment ? 1 : 0;
        return part === segment;
      }
      raw[part.slice(1)] = segment;
      return segment !== '';
    });
    if (matches && (best === null || literals > best.literals)) best = { name, literals, raw };
  }
  if (best === null) return { kind: 'none' };
  const route = ADMIN_ROUTES[best.name];
  if (route.method !== method) return { kind: 'wrong_method', allowed: route.method };
  const decoded: Record<string, string> = {};
  for (const [key, segment] of Object.entries(best.raw)) {
    try {
      decoded[key] = decodeURIComponent(segment);
    } catch {
      throw new AdminRefusal(400, 'invalid_param', `The ${key} in ${path} is not valid percent-encoding.`);
    }
  }
  return { kind: 'call', name: best.name, raw: decoded };
}
