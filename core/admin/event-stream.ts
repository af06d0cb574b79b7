// `GET /api/events`: the admin events as Server-Sent Events, for the dashboard in a browser.
//
// Each event is `event: <type>` plus one `data:` line holding the whole AdminEvent as JSON
// (JSON.stringify never emits a raw line break, so one line always suffices). The whole event
// rather than its payload, so the renderer parses the same union it receives over IPC.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminEvent } from '../contracts/admin-events.js';
import type { AdminClock, AdminService } from './admin-service.js';
import { BASE_HEADERS } from './replies.js';

/** A comment line this often keeps proxies and idle-connection reapers from closing the stream. */
export const DEFAULT_HEARTBEAT_MS = 15_000;

/**
 * A client that stops reading (a suspended laptop's browser) would make us buffer every
 * snapshot forever. Past this much unsent data the connection is dropped; EventSource
 * reconnects and starts again from a full snapshot, so nothing is lost but the backlog.
 */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

export interface EventStreamOptions {
  clock: AdminClock;
  heartbeatMs: number;
}

/**
 * Turns the response into an event stream: the full snapshot first, then every event the
 * service emits, plus a heartbeat comment every `heartbeatMs`. Returns at once; the stream
 * lives until the client goes, which unsubscribes and stops the heartbeat.
 */
export function openEventStream(req: IncomingMessage, res: ServerResponse, service: AdminService, options: EventStreamOptions): void {
  res.writeHead(200, {
    ...BASE_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    connection: 'keep-alive',
    // Proxies such as nginx buffer responses unless told not to; a buffered stream is a dead one.
    'x-accel-buffering': 'no',
  });
  res.socket?.setNoDelay(true);

  let heartbeat: unknown = null;
  const write = (chunk: string): void => {
    if (res.destroyed || res.writableEnded) return;
    res.write(chunk);
    if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
  };
  const beat = (): void => {
    heartbeat = options.clock.setTimeout(() => {
      write(': heartbeat\n\n');
      beat();
    }, options.heartbeatMs);
  };
  const unsubscribe = service.subscribe((event: AdminEvent) => write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`));
  beat();
  const stop = (): void => {
    unsubscribe();
    options.clock.clearTimeout(heartbeat);
  };
  // A client gone before we got here has already fired 'close'.
  if (res.destroyed) stop();
  else res.once('close', stop);
  req.once('error', () => res.destroy());
}
