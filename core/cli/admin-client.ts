// The CLI's side of the admin API: the route table's calls over HTTP through the same client
// the dashboard's bridge uses (core/admin-client/admin-http-client.ts), with the token from
// DATA_DIR/admin-token, plus reading the event stream until the CLI has seen what it waits for.
import type { AdminEvent } from '../contracts/admin-events.js';
import { createAdminHttpApi, openAdminEvents, type AdminHttpOptions } from '../admin-client/admin-http-client.js';
import type { AdminApi } from '../contracts/admin-routes.js';
import { readEventStream } from '../admin-client/event-stream-reader.js';

export interface CliAdmin extends AdminApi {
  /**
   * Reads the admin event stream until `onEvent` returns true or `signal` aborts. Rejects
   * when the daemon refuses the stream or it breaks before then.
   */
  events(onEvent: (event: AdminEvent) => boolean, signal: AbortSignal): Promise<void>;
}

export function createCliAdmin(origin: string, token: string): CliAdmin {
  const http: AdminHttpOptions = { baseUrl: origin, fetch, token: () => token };
  return {
    ...createAdminHttpApi(http),
    async events(onEvent, signal) {
      const done = new AbortController();
      const response = await openAdminEvents(http, AbortSignal.any([signal, done.signal]));
      try {
        await readEventStream(response.body, (message) => {
          if (!done.signal.aborted && onEvent(JSON.parse(message.data) as AdminEvent)) done.abort();
        });
      } catch (error) {
        if (!done.signal.aborted) throw error;
      }
    },
  };
}
