// The CLI's side of the admin API: the same HTTP routes the dashboard uses, with the token
// from DATA_DIR/admin-token in an Authorization header.
import type { AdminEvent } from '../contracts/admin-events.js';
import { readEventStream } from '../contracts/event-stream-reader.js';
import type { CommandResult, ModelCommand, ModelLogsResponse } from '../contracts/commands.js';
import type { Snapshot } from '../contracts/snapshot.js';

export class AdminClient {
  constructor(
    private readonly origin: string,
    private readonly token: string,
  ) {}

  private headers(): Record<string, string> {
    return { authorization: `Bearer ${this.token}` };
  }

  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    try {
      return await fetch(`${this.origin}${path}`, { ...init, headers: { ...this.headers(), ...(init.headers as Record<string, string> | undefined) } });
    } catch (error) {
      throw new Error(`cannot reach the llmtray daemon at ${this.origin} (${error instanceof Error ? error.message : String(error)}); is \`llmtray serve\` running?`);
    }
  }

  async state(): Promise<Snapshot> {
    const res = await this.request('/api/state');
    if (!res.ok) throw new Error(`the daemon answered ${res.status} to /api/state: ${await res.text()}`);
    return (await res.json()) as Snapshot;
  }

  /** Runs a command; the daemon's own sentence comes back either way. */
  async command(command: ModelCommand, modelId: string): Promise<CommandResult> {
    const res = await this.request(`/api/models/${encodeURIComponent(modelId)}/${command}`, { method: 'POST' });
    const body = (await res.json().catch(() => null)) as CommandResult | { error?: { message?: string } } | null;
    if (body !== null && 'ok' in body) return body;
    return { ok: false, message: body?.error?.message ?? `the daemon answered ${res.status}` };
  }

  /** The model's log tail (by id or alias) with its canonical id and the position after it; rejects with the daemon's sentence for an unknown model. */
  async logs(modelId: string): Promise<ModelLogsResponse> {
    const res = await this.request(`/api/models/${encodeURIComponent(modelId)}/logs`);
    const body = (await res.json()) as Partial<ModelLogsResponse> & { error?: { message?: string } };
    if (!res.ok) throw new Error(body.error?.message ?? `the daemon answered ${res.status}`);
    return { modelId: body.modelId ?? modelId, lines: body.lines ?? [], next: body.next ?? 0 };
  }

  /**
   * Reads the admin event stream until `onEvent` returns true or `signal` aborts. Over fetch,
   * because Node 20 has no EventSource and the stream needs the token header.
   */
  async events(onEvent: (event: AdminEvent) => boolean, signal: AbortSignal): Promise<void> {
    const done = new AbortController();
    const res = await this.request('/api/events', { signal: AbortSignal.any([signal, done.signal]), headers: { accept: 'text/event-stream' } });
    if (!res.ok || res.body === null) throw new Error(`the daemon answered ${res.status} to /api/events`);
    try {
      await readEventStream(res.body, (message) => {
        if (!done.signal.aborted && onEvent(JSON.parse(message.data) as AdminEvent)) done.abort();
      });
    } catch (error) {
      if (!done.signal.aborted) throw error;
    }
  }
}
