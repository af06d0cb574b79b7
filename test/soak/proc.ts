// What the kernel says about a process (Linux /proc): its open file descriptors, its resident
// memory, its address-space limit, and which TCP ports anything on the machine listens on.
// The leak checks read these, not the daemon's own account of itself.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Open file descriptors of `pid`. */
export function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

function statusField(pid: number, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m === null) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(m[1]) * 1024;
}

/** Resident memory of `pid`, bytes (VmRSS). */
export function rssBytes(pid: number): number {
  return statusField(pid, 'VmRSS');
}

/** The most address space `pid` has held, bytes (VmPeak). */
export function peakAddressSpaceBytes(pid: number): number {
  return statusField(pid, 'VmPeak');
}

/** The soft address-space limit of `pid`, bytes, or null when unlimited. */
export function addressSpaceLimit(pid: number): number | null {
  const m = /^Max address space\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  if (m === null) throw new Error(`/proc/${pid}/limits has no address-space line`);
  return m[1] === 'unlimited' ? null : Number(m[1]);
}

export interface ListeningSocket {
  port: number;
  inode: number;
}

/** Every listening TCP socket on the machine (IPv4 and IPv6): its local port and socket inode. */
export function listeningSockets(): ListeningSocket[] {
  const sockets: ListeningSocket[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue; // no IPv6 on this machine
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; state 0A is LISTEN; field 9 is the socket's inode.
      if (fields[3] !== '0A') continue;
      const port = Number.parseInt(fields[1]?.split(':')[1] ?? '', 16);
      const inode = Number(fields[9]);
      if (Number.isInteger(port) && Number.isInteger(inode)) sockets.push({ port, inode });
    }
  }
  return sockets;
}

/**
 * The pids holding each of these socket inodes open. A port number alone says nothing on a
 * shared machine — another program may listen on a port one of our engines used an hour ago —
 * so a leaked port is one that a process of ours still holds.
 */
export function socketOwners(inodes: ReadonlySet<number>): Map<number, number[]> {
  const owners = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue; // gone, or not ours to read
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m === null || !inodes.has(Number(m[1]))) continue;
      const inode = Number(m[1]);
      owners.set(inode, [...(owners.get(inode) ?? []), Number(entry)]);
    }
  }
  return owners;
}

/** The command line of `pid`, arguments joined by spaces; '' when it is gone. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}
