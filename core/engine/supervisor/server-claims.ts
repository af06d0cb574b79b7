// The requests a server is answering, as the router claims them: the one count that both
// "never stop a claimed server" and hang detection read.
//
// Why the supervisor holds the claims, and not the router's own counters: the eviction must
// re-check "nothing is claimed" at the very moment it stops the server, inside the model's
// owner, or a request that claims the endpoint between the controller's read of the counts
// and the SIGTERM is cut off mid-answer (llama-swap's read-then-decide race). Claiming and
// stopping are both synchronous steps on this one object, so in Node's single thread they
// exclude each other: a claim sees the server stopping and gets nothing, or the stop sees the
// claim and waits for the next pass.
//
// A claim's `lost` is a Notice, not an AbortController: one is made per request, and an
// AbortSignal's creation was a measurable share of the daemon's work per request (notice.ts).
//
// A claim belongs to one server process, never to a model name: a request claimed on a server
// that was then replaced must not keep the new one "busy", nor be told the new one hung.

import { Notice, type AbortNotice } from '../../common/notice.js';
import type { EngineKind } from '../../contracts/snapshot.js';

/** Where a claimed request goes. The key goes in `Authorization: Bearer`. */
export interface ClaimedEndpoint {
  port: number;
  apiKey: string;
  pid: number;
  /** It serves Anthropic's Messages API itself; the router translates for it otherwise. */
  anthropicMessages: boolean;
  /** Which engine answers: the router refuses what that engine cannot honour (request-fields.ts). */
  engine: EngineKind;
  /** It can call tools (a llama-server build without Jinja templates cannot): `tools` is refused by name otherwise. */
  toolCalls: boolean;
}

/** Why a claimed server stopped answering: its clients are told this, in OpenAI's error shape. */
export interface ServerLost {
  kind: 'hang';
  /** A sentence with the numbers ("it made no progress for 60 s with 1 request in flight: …"). */
  reason: string;
}

/** One request being answered by one server. */
export interface Claim {
  readonly endpoint: ClaimedEndpoint;
  /**
   * Aborts (reason: ServerLost) when the supervisor finds the server hung, just before it kills
   * it: the holder answers its client with the reason instead of meeting a reset socket.
   */
  readonly lost: AbortNotice;
  /** The answer moved (bytes were relayed to the client): progress for hang detection. O(1), non-blocking. */
  progressed(): void;
  /** The exchange is over, for any reason. Idempotent; the first call counts. */
  release(): void;
  /**
   * Before a chat request is forwarded: loads a saved conversation sharing its prompt's prefix
   * into the server (a llama-server's saved slots); resolves at once where there is none. Never rejects.
   */
  beforeChat(body: Record<string, unknown>): Promise<void>;
}

export class ServerClaims {
  private readonly open = new Set<Notice>();
  /** Bumped on every `progressed`; hang detection compares it between looks. */
  progressMark = 0;

  /** Called when the count goes from 0 to 1 and back to 0, synchronously. */
  constructor(private readonly onBusyChange: (busy: boolean) => void = () => {}) {}

  get count(): number {
    return this.open.size;
  }

  /** Adds a claim on `endpoint`; `beforeChat` as Claim's (default: nothing to do). Non-blocking. */
  add(endpoint: ClaimedEndpoint, beforeChat: (body: Record<string, unknown>) => Promise<void> = () => Promise.resolve()): Claim {
    const lost = new Notice();
    this.open.add(lost);
    if (this.open.size === 1) this.onBusyChange(true);
    const claims = this;
    return {
      endpoint,
      lost,
      beforeChat,
      progressed() {
        claims.progressMark++;
      },
      release() {
        if (!claims.open.delete(lost)) return;
        if (claims.open.size === 0) claims.onBusyChange(false);
      },
    };
  }

  /** Tells every holder that the server is lost, and forgets them (their `release` becomes a no-op). */
  loseAll(why: ServerLost): void {
    const holders = [...this.open];
    this.open.clear();
    if (holders.length > 0) this.onBusyChange(false);
    for (const holder of holders) holder.abort(why);
  }
}
