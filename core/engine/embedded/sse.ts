// Server-sent events as llama-server and OpenAI send them: `data: <json>\n\n` per chunk and a
// final `data: [DONE]`. Written straight to the socket, never buffered, so the router can
// stream through and a person sees tokens as they come.
import type { ServerResponse } from 'node:http';

export interface SseStream {
  /** Sends one event. Never blocks; a gone client makes it a no-op. */
  send(data: unknown): void;
  /** Sends `[DONE]` and ends the response. Idempotent. */
  done(): void;
}

export function startSse(res: ServerResponse): SseStream {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  res.flushHeaders();
  return {
    send(data) {
      if (!res.writableEnded && !res.destroyed) res.write(`data: ${JSON.stringify(data)}\n\n`);
    },
    done() {
      if (res.writableEnded || res.destroyed) return;
      res.write('data: [DONE]\n\n');
      res.end();
    },
  };
}
