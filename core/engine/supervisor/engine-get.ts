// One GET to a model server on loopback, bounded, never rejecting: the supervisor's probes
// (readiness, hang detection) all need exactly this and nothing more — and one POST of a small
// JSON body, for the probe that asks a ready server which APIs it serves (served-apis.ts).
import { request } from 'node:http';

/** What came back: the status and up to 64 KiB of the body, or null when nothing answered in time. */
export interface EngineAnswer {
  status: number;
  body: string;
}

const BODY_LIMIT = 64 * 1024;

/**
 * GET `path` with the engine's key (llama-server exempts /health from it; sending it anyway
 * suits engines that do not). Resolves null when the connection fails or no complete answer
 * arrives within `timeoutMs` — a stopped process accepts the connection and then says nothing.
 */
export function engineGet(port: number, apiKey: string, path: string, timeoutMs: number): Promise<EngineAnswer | null> {
  return engineRequest(port, apiKey, path, timeoutMs, null);
}

/**
 * POST `body` as JSON to `path`, with the engine's key; otherwise as engineGet. `bodyLimit`: how
 * much of the answer is kept (a rendered prompt can be longer than a probe's 64 KiB).
 */
export function enginePost(port: number, apiKey: string, path: string, body: unknown, timeoutMs: number, bodyLimit = BODY_LIMIT): Promise<EngineAnswer | null> {
  return engineRequest(port, apiKey, path, timeoutMs, Buffer.from(JSON.stringify(body)), bodyLimit);
}

function engineRequest(port: number, apiKey: string, path: string, timeoutMs: number, body: Buffer | null, bodyLimit = BODY_LIMIT): Promise<EngineAnswer | null> {
  const headers: Record<string, string | number> = { authorization: `Bearer ${apiKey}` };
  if (body !== null) Object.assign(headers, { 'content-type': 'application/json', 'content-length': body.length });
  return new Promise((resolve) => {
    let settled = false;
    const finish = (answer: EngineAnswer | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(answer);
    };
    const req = request(
      { host: '127.0.0.1', port, path, method: body === null ? 'GET' : 'POST', agent: false, headers },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (body.length < bodyLimit) body += chunk;
        });
        res.on('end', () => finish({ status: res.statusCode ?? 0, body }));
        res.on('error', () => finish(null));
      },
    );
    // One timer for the whole exchange: the socket's idle timeout would restart on every byte.
    const timer = setTimeout(() => {
      req.destroy();
      finish(null);
    }, timeoutMs);
    req.on('error', () => finish(null));
    req.end(body ?? undefined);
  });
}
