// HTTP/1.1 over a bare TCP socket: what no HTTP client library will send (a lying
// content-length, a broken chunked body, bytes that are not a request line), and the answer
// read back as it came, for the fuzz suite. One request per connection.
import net from 'node:net';

export interface RawAnswer {
  /** Nothing came back before the connection closed. */
  kind: 'closed' | 'answered';
  status: number;
  /** Lower-case names; a repeated header keeps its last value. */
  headers: Record<string, string>;
  /** The body, de-chunked; for an event stream only what came with the headers. */
  body: Buffer;
}

/**
 * Writes `bytes` to host:port and reads the answer. `halfClose`: end our side after writing
 * (a client that sent everything it will). An event stream (text/event-stream) is answered as
 * soon as its headers arrive, and the connection dropped. Rejects only when nothing at all
 * happens within `timeoutMs` (the server hung on the request).
 */
export function rawExchange(host: string, port: number, bytes: Buffer, options: { halfClose: boolean; timeoutMs: number }): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (answer: RawAnswer | Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (answer instanceof Error) reject(answer);
      else resolve(answer);
    };
    const timer = setTimeout(() => finish(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    socket.on('connect', () => {
      socket.write(bytes, () => {
        if (options.halfClose) socket.end();
      });
    });
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const parsed = parseAnswer(Buffer.concat(chunks), false);
      if (parsed !== null && parsed.headers['content-type']?.startsWith('text/event-stream')) finish(parsed);
    });
    // The server closing is the end of the answer (every request asks for Connection: close).
    socket.on('close', () => {
      const all = Buffer.concat(chunks);
      if (all.length === 0) return finish({ kind: 'closed', status: 0, headers: {}, body: Buffer.alloc(0) });
      const parsed = parseAnswer(all, true);
      finish(parsed ?? new Error(`an answer that is not HTTP: ${JSON.stringify(all.subarray(0, 200).toString('latin1'))}`));
    });
    // A reset after the answer is the server dropping the rest of a body it refused: fine.
    socket.on('error', () => undefined);
  });
}

/** The first response in `bytes`, or null while its head is incomplete. `complete`: the connection has closed. */
function parseAnswer(bytes: Buffer, complete: boolean): RawAnswer | null {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd === -1) return null;
  const [statusLine = '', ...lines] = bytes.subarray(0, headEnd).toString('latin1').split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (match === null) throw new Error(`not a status line: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = bytes.subarray(headEnd + 4);
  if (!complete) return { kind: 'answered', status: Number(match[1]), headers, body: rest };
  const body = headers['transfer-encoding']?.toLowerCase() === 'chunked' ? dechunk(rest) : rest.subarray(0, Number(headers['content-length'] ?? rest.length));
  return { kind: 'answered', status: Number(match[1]), headers, body };
}

function dechunk(bytes: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd === -1) break;
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
