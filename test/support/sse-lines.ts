// A raw SSE reader for tests that must see what the official SDKs hide: comment lines, and when
// each line arrived. POSTs a JSON body with node:http and records every line of the answer as it
// completes, with the time (performance.now()) of the chunk that completed it.
import http from 'node:http';

export interface TimedLine {
  text: string;
  at: number;
}

export interface SseAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** When the request was sent (performance.now()). */
  sentAt: number;
  /** Every non-empty line, in order. */
  lines: TimedLine[];
  /** The whole body as it came. */
  body: string;
}

export function postForLines(url: string, body: unknown, headers: Record<string, string> = {}): Promise<SseAnswer> {
  const target = new URL(url);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const sentAt = performance.now();
    const req = http.request(
      { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers } },
      (res) => {
        const lines: TimedLine[] = [];
        let text = '';
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const at = performance.now();
          text += chunk;
          const parts = (pending + chunk).split('\n');
          pending = parts.pop() ?? '';
          for (const line of parts) if (line.replace(/\r$/, '') !== '') lines.push({ text: line.replace(/\r$/, ''), at });
        });
        res.on('end', () => {
          if (pending !== '') lines.push({ text: pending, at: performance.now() });
          resolve({ status: res.statusCode ?? 0, headers: res.headers, sentAt, lines, body: text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The body without the leading comment blocks (`: …` lines and their blank lines). */
export function withoutComments(body: string): string {
  return body.replace(/^(:[^\n]*\n\n?)+/, '');
}
