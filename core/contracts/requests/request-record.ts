// One request to a model as the router saw it: which model answered it, whether it waited, what
// it cost (time to first token, tokens, speed) and how it ended. The router writes one per
// request that reaches a model route (core/router/http/request-trace.ts); the daemon keeps the
// newest in a ring (core/demand/request-log.ts); `GET /api/activity`, the admin event stream's
// RequestRecorded, `llmtray activity` and the dashboard's Activity tab read them.
//
// Why records and not counters alone: the person asking "why was that answer slow" needs the one
// request — it waited 9 s for a load, then wrote at 40 tokens/s — which no average can say.

/**
 * What a request waited for before an engine took it: its model to load (or to be relaunched,
 * or retried), or room: memory held by other models, another model's turn, or a place in its
 * model's queue. Null: it was taken at once.
 */
export type RequestWait = 'load' | 'room';

export interface RequestRecord {
  /** `r1`, `r2`, …: unique within one daemon's life, in arrival order. */
  id: string;
  /** When it arrived, epoch ms. */
  at: number;
  /** The path it came on: `/v1/chat/completions`, `/v1/messages`, `/v1/responses`, `/completion`, … */
  route: string;
  /** The catalog id of the model it asked for; the name as sent when no model has it (a 404); null when the body never named one. */
  model: string | null;
  /** The model that answered: `model`, or its fallback; null when no engine took it. */
  servedBy: string | null;
  /** The name of the client key it presented (listen.clientKeys), or "local" where no key is configured. */
  client: string;
  /**
   * How it ended: the answer's HTTP status; for a stream already answered 200 that then broke
   * (the engine died, the model could not come while the stream was open), the status of the
   * error that ended it; 499 when the client left before its answer was complete (nginx's code
   * for it: no status was ever sent).
   */
  status: number;
  /** It asked for an event stream. */
  stream: boolean;
  waited: RequestWait | null;
  /** How long it waited for an engine, ms (0 when taken at once). */
  waitMs: number;
  /**
   * From its arrival to the first token of the answer, ms: the first answer bytes of a stream;
   * for a whole answer, the time it was sent to the engine plus the engine's own prompt time
   * where the engine says it (llama-server's `timings.prompt_ms`). Null when not known.
   */
  firstTokenMs: number | null;
  /** The engine's usage: prompt tokens (cached ones included), those of them taken from its cache, tokens written. Null where the engine did not say. */
  promptTokens: number | null;
  cachedTokens: number | null;
  completionTokens: number | null;
  /** The generation's speed, tokens/s: the engine's own figure (llama-server's `timings.predicted_per_second`), else tokens written over the time they took to arrive. */
  tokensPerSecond: number | null;
  /** From arrival to the answer's end, ms. */
  durationMs: number;
  /** What went wrong, in the words the client was told; null when it was answered. */
  error: string | null;
  /** Its bodies, only where `activity.keepBodies` is set: cut at `truncated` when over the budget. */
  bodies?: RequestBodies;
}

export interface RequestBodies {
  request: string;
  answer: string;
  /** Either body was cut (the budget of `activity.keepBodies` per request). */
  truncated: boolean;
}

/**
 * Which records a reader asks for; every field absent means any. `status` is a code (`429`) or a
 * class (`4xx`, `5xx`, `2xx`).
 */
export interface RequestFilter {
  model?: string;
  status?: string;
  client?: string;
}

/** A status filter as a person types it: a code from 100 to 599, or a class such as 4xx. */
export const STATUS_FILTER = /^(?:[1-5]\d\d|[1-5]xx)$/;

/** Whether `record` is one `filter` asks for; `model` matches either the asked or the answering model. */
export function matchesFilter(record: RequestRecord, filter: RequestFilter): boolean {
  if (filter.model !== undefined && record.model !== filter.model && record.servedBy !== filter.model) return false;
  if (filter.client !== undefined && record.client !== filter.client) return false;
  if (filter.status !== undefined) {
    const wanted = filter.status;
    const status = String(record.status);
    if (wanted.endsWith('xx') ? status[0] !== wanted[0] : status !== wanted) return false;
  }
  return true;
}

/** The answer of `GET /api/activity`: the newest records first, and what the ring holds at most. */
export interface ActivityAnswer {
  requests: RequestRecord[];
  /** `activity.keep`: how many records the daemon holds; older ones are gone. */
  keep: number;
  /** `activity.keepBodies` in bytes per request; 0 when bodies are never kept (the page says which). */
  keepBodiesBytes: number;
}

/** The client name of a request that presented no key because none is configured. */
export const LOCAL_CLIENT = 'local';
