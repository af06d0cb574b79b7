// A request target's path without its query string. The router and the admin handler share
// one listener and must agree on what path a request is for (`/api/state?x` is `/api/state`).
export function pathOf(url: string | undefined): string {
  const raw = url ?? '/';
  const query = raw.indexOf('?');
  return query === -1 ? raw : raw.slice(0, query);
}
