// Reads a request body into one Buffer, refusing it past a limit.
//
// Why collect at all rather than pipe the request upstream: the router must read `model` to
// know where to send it, and a JSON field can be anywhere in the body. Bodies are chat
// transcripts — kilobytes to a few megabytes — so one copy is cheap; the limit is what keeps a
// runaway client from filling memory. Past the limit the rest is left to Node, which discards
// it so the 413 still reaches a client that is busy sending.
import type { IncomingMessage } from 'node:http';

export type BodyResult =
  | { kind: 'read'; body: Buffer }
  | { kind: 'too_large'; receivedBytes: number }
  | { kind: 'aborted' };

export function readBody(req: IncomingMessage, limitBytes: number): Promise<BodyResult> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) {
    return Promise.resolve({ kind: 'too_large', receivedBytes: declared });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = (result: BodyResult): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAbort);
      req.off('aborted', onAbort);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > limitBytes) {
        stop({ kind: 'too_large', receivedBytes: received });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => stop({ kind: 'read', body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received) });
    const onAbort = (): void => stop({ kind: 'aborted' });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAbort);
    req.on('aborted', onAbort);
  });
}
