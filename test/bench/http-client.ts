// The benchmarks' HTTP client: node:http with the caller's agent, nothing else.
//
// Why not the openai package: its own per-request work (retries, schema handling, a fetch
// stack) costs about as much as the router overhead being measured, and would blur the
// comparison. Why absolute timestamps (performance.now()) instead of durations: the activation
// and readiness benchmarks line them up against events from other sources (a spawn, a log line).
import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface Target {
  port: number;
  /** Sent as `Authorization: Bearer`; none when undefined. */
  apiKey?: string;
}

export interface StreamTimes {
  startedAt: number;
  /** The first byte of the body (for chat: the role event, sent before any decoding). */
  firstByteAt: number;
  /** The first event that carries generated text. */
  firstTokenAt: number;
  endedAt: number;
}

/** A short chat completion body (one token unless asked for more), well under 4 KB. */
export function chatBody(model: string, stream: boolean, maxTokens = 1): Buffer {
  return Buffer.from(
    JSON.stringify({
      model,
      messages: [
        { role: 'system', content: 'You are a benchmark. Answer with one word.' },
        { role: 'user', content: 'Name a colour.' },
      ],
      max_tokens: maxTokens,
      temperature: 0,
      stream,
    }),
  );
}

function post(agent: http.Agent | false, target: Target, path: string, body: Buffer): http.ClientRequest {
  const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', 'content-length': body.length };
  if (target.apiKey !== undefined) headers.authorization = `Bearer ${target.apiKey}`;
  return http.request({ agent, host: '127.0.0.1', port: target.port, method: 'POST', path, headers });
}

/** Sends one non-streaming request and resolves with its latency, ms. Rejects on a non-200 answer. */
export function timedPost(agent: http.Agent | false, target: Target, path: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = post(agent, target, path, body);
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('error', reject);
      res.once('end', () => {
        const elapsed = performance.now() - started;
        if (res.statusCode === 200) resolve(elapsed);
        else reject(new Error(`POST ${path} on port ${target.port} answered ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 500)}`));
      });
    });
    req.end(body);
  });
}

/** True when an SSE text holds a `data:` event whose first choice carries generated text. */
function holdsToken(text: string): boolean {
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line.startsWith('data: [DONE]')) continue;
    try {
      const event = JSON.parse(line.slice('data: '.length)) as { choices?: { delta?: { content?: unknown }; text?: unknown }[] };
      const choice = event.choices?.[0];
      const content = choice?.delta?.content ?? choice?.text;
      if (typeof content === 'string' && content.length > 0) return true;
    } catch {
      // An event split across chunks: the next chunk completes it.
    }
  }
  return false;
}

/** Sends one streaming request and resolves with when its first byte, first token and end came. */
export function timedStream(agent: http.Agent | false, target: Target, path: string, body: Buffer): Promise<StreamTimes> {
  return new Promise((resolve, reject) => {
    const startedAt = performance.now();
    let firstByteAt = Number.NaN;
    let firstTokenAt = Number.NaN;
    let text = '';
    const req = post(agent, target, path, body);
    req.once('error', reject);
    req.once('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const now = performance.now();
        if (Number.isNaN(firstByteAt)) firstByteAt = now;
        if (Number.isNaN(firstTokenAt)) {
          text += chunk;
          if (holdsToken(text)) firstTokenAt = now;
        }
      });
      res.once('error', reject);
      res.once('end', () => {
        const endedAt = performance.now();
        if (res.statusCode !== 200) reject(new Error(`POST ${path} on port ${target.port} answered ${res.statusCode}: ${text.slice(0, 500)}`));
        else if (Number.isNaN(firstTokenAt)) reject(new Error(`the stream from port ${target.port} ended without a token: ${text.slice(0, 500)}`));
        else resolve({ startedAt, firstByteAt, firstTokenAt, endedAt });
      });
    });
    req.end(body);
  });
}
