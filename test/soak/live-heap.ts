// The daemon's live heap, read through its inspector: a full garbage collection
// (HeapProfiler.collectGarbage), then process.memoryUsage() evaluated in the daemon.
//
// Why: RSS alone cannot tell a leak from V8's and malloc's high-water marks, which grow under
// load and are not given back at rest (RELIABILITY.md: +3.6 to +19.1 MB of RSS on code that
// changed little, while heap snapshots read the live heap flat). What survives a full GC is what
// the daemon keeps; a leak grows it, an allocator's high-water mark does not.
//
// Why a WebSocket client of our own: the inspector speaks the DevTools protocol over a
// WebSocket, Node 20 has no WebSocket without --experimental-websocket, and the project has no
// WebSocket package. The protocol needs only small text frames, one at a time.
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { Socket } from 'node:net';

/** The Node flag that opens the daemon's inspector on a free port of 127.0.0.1; it prints the URL on stderr. */
export const INSPECT_FLAG = '--inspect=127.0.0.1:0';

export interface HeapReading {
  /** V8's heap in use after a full collection: what the daemon's JavaScript keeps. */
  heapUsedBytes: number;
  /** Memory of C++ objects bound to JavaScript ones (Buffers among them), after the same collection. */
  externalBytes: number;
}

/** The inspector's WebSocket URL from what the process wrote to stderr, or null before it wrote it. */
export function inspectorUrl(stderr: string): string | null {
  return /Debugger listening on (ws:\/\/\S+)/.exec(stderr)?.[1] ?? null;
}

/** One client frame: FIN, the opcode, masked (RFC 6455 requires it of a client). */
function frame(opcode: number, payload: Buffer): Buffer {
  const mask = randomBytes(4);
  const length = payload.length;
  if (length >= 65_536) throw new Error(`an inspector command of ${length} bytes is more than this client frames`);
  const head = length < 126 ? Buffer.from([0x80 | opcode, 0x80 | length]) : Buffer.from([0x80 | opcode, 0x80 | 126, length >> 8, length & 0xff]);
  const body = Buffer.alloc(length);
  for (let i = 0; i < length; i++) body[i] = (payload[i] as number) ^ (mask[i % 4] as number);
  return Buffer.concat([head, mask, body]);
}

/** Splits the server's (unmasked) frames off `buffer`; returns the messages and what is left over. */
function parseFrames(buffer: Buffer): { messages: { opcode: number; fin: boolean; payload: Buffer }[]; rest: Buffer } {
  const messages: { opcode: number; fin: boolean; payload: Buffer }[] = [];
  let at = 0;
  for (;;) {
    if (buffer.length - at < 2) break;
    const b0 = buffer[at] as number;
    const b1 = buffer[at + 1] as number;
    let length = b1 & 0x7f;
    let offset = at + 2;
    if (length === 126) {
      if (buffer.length - offset < 2) break;
      length = buffer.readUInt16BE(offset);
      offset += 2;
    } else if (length === 127) {
      if (buffer.length - offset < 8) break;
      length = Number(buffer.readBigUInt64BE(offset));
      offset += 8;
    }
    if (buffer.length - offset < length) break;
    messages.push({ opcode: b0 & 0x0f, fin: (b0 & 0x80) !== 0, payload: buffer.subarray(offset, offset + length) });
    at = offset + length;
  }
  return { messages, rest: buffer.subarray(at) };
}

function connect(url: string, timeoutMs: number): Promise<Socket> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((done, fail) => {
    const req = request({
      host: hostname,
      port,
      path: pathname,
      timeout: timeoutMs,
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': randomBytes(16).toString('base64') },
    });
    req.once('upgrade', (_res, socket, head) => {
      if (head.length > 0) socket.unshift(head);
      done(socket);
    });
    req.once('response', (res) => fail(new Error(`the inspector at ${url} answered ${res.statusCode} instead of upgrading to a WebSocket`)));
    req.once('timeout', () => req.destroy(new Error(`the inspector at ${url} did not answer within ${timeoutMs} ms`)));
    req.once('error', fail);
    req.end();
  });
}

/**
 * Connects to the inspector at `url`, collects garbage, reads process.memoryUsage(), and
 * disconnects: a session left open would hold the daemon at its exit ("Waiting for the debugger
 * to disconnect"), and its socket would count among the daemon's descriptors.
 */
export async function liveHeapAfterGc(url: string, timeoutMs = 60_000): Promise<HeapReading> {
  const socket = await connect(url, timeoutMs);
  let pending: Buffer = Buffer.alloc(0);
  let partial: Buffer[] = [];
  const waiting = new Map<number, { done: (result: unknown) => void; fail: (error: Error) => void }>();
  const failAll = (error: Error) => {
    for (const w of waiting.values()) w.fail(error);
    waiting.clear();
  };
  socket.on('data', (chunk: Buffer) => {
    const parsed = parseFrames(Buffer.concat([pending, chunk]));
    pending = parsed.rest;
    for (const m of parsed.messages) {
      if (m.opcode === 0x8) return failAll(new Error('the inspector closed the session'));
      if (m.opcode !== 0x1 && m.opcode !== 0x0) continue; // pings and binary frames carry no answer
      partial.push(m.payload);
      if (!m.fin) continue;
      const text = Buffer.concat(partial).toString('utf8');
      partial = [];
      const message = JSON.parse(text) as { id?: number; result?: unknown; error?: { message: string } };
      const w = message.id === undefined ? undefined : waiting.get(message.id);
      if (w === undefined) continue; // an event, not an answer
      waiting.delete(message.id as number);
      if (message.error !== undefined) w.fail(new Error(`the inspector refused: ${message.error.message}`));
      else w.done(message.result);
    }
  });
  socket.once('error', failAll);
  socket.once('close', () => failAll(new Error('the inspector connection closed before it answered')));
  let nextId = 1;
  const send = (method: string, params: object = {}): Promise<unknown> =>
    new Promise((done, fail) => {
      const id = nextId++;
      const timer = setTimeout(() => fail(new Error(`the inspector did not answer ${method} within ${timeoutMs} ms`)), timeoutMs);
      waiting.set(id, { done: (r) => (clearTimeout(timer), done(r)), fail: (e) => (clearTimeout(timer), fail(e)) });
      socket.write(frame(0x1, Buffer.from(JSON.stringify({ id, method, params }))));
    });
  try {
    await send('HeapProfiler.collectGarbage');
    const answer = (await send('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true })) as { result?: { value?: unknown } };
    const usage = JSON.parse(String(answer.result?.value)) as { heapUsed?: unknown; external?: unknown };
    if (typeof usage.heapUsed !== 'number' || typeof usage.external !== 'number') throw new Error(`process.memoryUsage() read ${String(answer.result?.value)}`);
    return { heapUsedBytes: usage.heapUsed, externalBytes: usage.external };
  } finally {
    socket.removeAllListeners('close');
    socket.end(frame(0x8, Buffer.alloc(0)));
  }
}
