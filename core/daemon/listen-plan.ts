// Where the daemon listens, and whether it may: the LAN mode's rules, decided before anything
// binds a port. Pure: the network interfaces are passed in.
//
// Safe by default (llama-swap's maintainers declined to make their LAN listen safe, their
// issue #739): an address other machines can reach is refused without a client key, naming the
// field to set. With keys, the OpenAI endpoint is served on that address; the CLI, the
// dashboard and local apps keep using 127.0.0.1, which a wildcard listener (0.0.0.0, ::)
// covers by itself and a specific address (192.168.1.20) gets as a second listener on the same
// port. The admin API answers loopback connections only unless listen.admin says otherwise
// (router.ts), so a LAN client with a key reaches the models and nothing else.
import { isLoopbackListenHost, isWildcardHost } from '../common/loopback.js';
import type { ListenConfig } from '../catalog/config/load-config.js';
import { MIN_CLIENT_KEY_LENGTH } from '../catalog/config/schema.js';

export interface ListenPlan {
  /** The address asked for (`--host`, else listen.host). */
  host: string;
  /** Other machines can reach it: /v1 needs a client key. */
  network: boolean;
  /** A second listener on 127.0.0.1 at the same port, because `host` does not accept loopback connections. */
  loopbackToo: boolean;
}

export function planListen(host: string): ListenPlan {
  const network = !isLoopbackListenHost(host);
  return { host, network, loopbackToo: network && !isWildcardHost(host) };
}

/**
 * Why the daemon must not start on `plan`, as the sentence that ends `llmtray serve`, or null.
 * `fromFlag`: the address came from `--host` rather than the config file.
 */
export function listenRefusal(plan: ListenPlan, listen: ListenConfig, where: { configPath: string; fromFlag: boolean; demo: boolean }): string | null {
  if (!plan.network || listen.clientKeys.length > 0) return null;
  const asked = where.fromFlag ? `--host ${plan.host}` : `listen.host ${JSON.stringify(plan.host)} in ${where.configPath}`;
  // Only a flag can ask the demo for the network when its generated config has no keys; a
  // listen.host in the demo's config is the person's own edit (the demo keeps it), and is
  // answered like any config: where to add a key. The desktop app passes no flags, so it only
  // ever gets that answer.
  if (where.demo && where.fromFlag) {
    return `${asked} would serve the demo to other machines with no client key, and --demo uses its own generated config, which has none: run the demo on 127.0.0.1 (drop --host), or serve your own config with listen.clientKeys set.`;
  }
  return `${asked} can be reached from other machines, and no client key is configured, so anyone who can reach it could use the models: add one under listen.clientKeys in ${where.configPath} ("- { name: laptop, key: <${MIN_CLIENT_KEY_LENGTH} or more characters> }"), one per app; clients send it as \`Authorization: Bearer <key>\` (or \`x-api-key\`). Or listen on 127.0.0.1.`;
}

/** Where local tools (the CLI, the dashboard, daemon.json) reach the daemon on `port`. */
export function localOrigin(plan: ListenPlan, port: number): string {
  // An IPv6 wildcard may be IPv6-only (bindv6only): its loopback is ::1, not 127.0.0.1.
  const ipv6Only = plan.host.includes(':') && isWildcardHost(plan.host);
  return ipv6Only ? `http://[::1]:${port}` : `http://127.0.0.1:${port}`;
}

/** A network interface's address, as os.networkInterfaces() lists them. */
export interface InterfaceAddress {
  address: string;
  family: 'IPv4' | 'IPv6';
  internal: boolean;
}

/**
 * The OpenAI base URLs other machines use, for `llmtray serve` to print: the listen address
 * itself, or for a wildcard this machine's external addresses; then the allowed host names.
 * Empty on a loopback listener.
 */
export function networkEndpoints(plan: ListenPlan, port: number, allowedHosts: readonly string[], interfaces: readonly InterfaceAddress[]): string[] {
  if (!plan.network) return [];
  const url = (host: string): string => `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}/v1`;
  const ipv4Only = plan.host === '0.0.0.0';
  const addresses = isWildcardHost(plan.host)
    ? interfaces.filter((a) => !a.internal && (!ipv4Only || a.family === 'IPv4') && !a.address.startsWith('fe80:')).map((a) => a.address)
    : [plan.host];
  return [...new Set([...addresses, ...allowedHosts].map(url))];
}
