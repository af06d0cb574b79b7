// Which listen addresses and which connections count as "this machine's own apps only".
//
// Only the default loopback addresses do: 127.0.0.1, ::1 and `localhost`. Any other listen
// address is a deliberate choice to be reachable by something else than a local app dialling
// 127.0.0.1: a LAN, a container bridge, a VPN, a port forward. That includes the rest of
// 127.0.0.0/8, which a port forward or a container can expose as easily; it is also what lets
// the tests exercise LAN mode for real on a loopback alias (127.0.0.2). Rather one rule that
// asks for a key too often than a guess about which addresses other machines can reach.

const LOOPBACK_LISTEN_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', '::1', '[::1]', 'localhost']);

/** Whether listening on `host` serves this machine's local apps only. */
export function isLoopbackListenHost(host: string): boolean {
  return LOOPBACK_LISTEN_HOSTS.has(host.trim().toLowerCase());
}

/** An address that listens on every interface (and so on loopback too). */
export function isWildcardHost(host: string): boolean {
  return ['0.0.0.0', '::', '[::]', '0:0:0:0:0:0:0:0'].includes(host.trim().toLowerCase());
}

/**
 * Whether a connection arrived on a loopback address of ours (its socket's local address), so
 * came from a local app dialling 127.0.0.1 or ::1; false for one that came in on a network
 * address, including over a wildcard listener. IPv4 on a dual-stack socket reads `::ffff:…`.
 */
export function arrivedOnLoopback(localAddress: string | undefined): boolean {
  return localAddress === '127.0.0.1' || localAddress === '::1' || localAddress === '::ffff:127.0.0.1';
}
