// Load progress for a streamed request that waits for its model: SSE comment lines such as
// `: llmtray: loading demo-chat, 40 %, 1.2 s`, one at once and then every half second until the
// request holds an engine.
//
// Why comments: every SSE client ignores a line that starts with ':' (the spec's keep-alive), so
// nothing changes for a client that does not look, while a person tailing the stream or a client
// that shows raw events sees why it waits. llama-swap first put its progress into
// `reasoning_content`, which landed in clients' thinking blocks and in the conversation history,
// and moved it to comments (llama-swap #583); nothing here ever touches `content` or
// `reasoning_content`, and a request that did not ask for a stream gets no progress at all.
//
// Why every half second when the promise is "at least every second": the daemon shares two
// loaded cores with the engine it is loading, and a timer can fire a few hundred ms late; half a
// second keeps the gaps a client sees under a second with that much lag.
import { loadPercentWords } from '../../contracts/snapshot-words.js';
import type { ServerResponse } from 'node:http';
import type { WaitProgress } from '../model-gateway.js';
import { openStream, type ErrorEvent } from './opened-stream.js';

export const PROGRESS_INTERVAL_MS = 500;

/**
 * The words of one progress comment for a request for `requested` that has waited `waitedMs`.
 * `progress` null: the gateway cannot say what the wait is for. Pure.
 */
export function progressText(requested: string, progress: WaitProgress | null, waitedMs: number): string {
  const waited = `${(Math.max(0, waitedMs) / 1000).toFixed(1)} s`;
  if (progress === null) return `waiting for ${requested}, ${waited}`;
  const model = progress.servedBy === requested ? requested : `${progress.servedBy} (the fallback for ${requested})`;
  switch (progress.kind) {
    case 'loading': {
      // An estimate is marked "~" (the tray's and the dashboard's words); with no basis for one there is no number at all.
      const percent = progress.fraction === null ? '' : `, ${loadPercentWords({ fraction: progress.fraction, estimated: progress.estimated })}`;
      return `loading ${model}${percent}, ${waited}`;
    }
    case 'memory':
      return `waiting for memory for ${model}, ${waited}`;
    case 'turn':
      return `waiting for ${model}'s turn (requests for other models that waited longer go first), ${waited}`;
    case 'slot':
      return `waiting for a free slot of ${model} (it serves ${progress.parallel} at once), ${waited}`;
    case 'stopping':
      return `waiting for ${model}'s previous server to stop, ${waited}`;
    case 'retry':
      return `${model} failed to load (${progress.failure}) and is being retried, ${waited}`;
    case 'queued':
      return `waiting to load ${model}, ${waited}`;
  }
}

/** One SSE comment: a line of its own, and a blank line so that the next event starts clean. */
export function progressComment(text: string): string {
  return `: llmtray: ${text.replace(/[\r\n]+/g, ' ')}\n\n`;
}

/**
 * The comments of one streamed request. `start` (when activation begins to wait) opens the event
 * stream if it is not open yet and writes the first comment at once; `stop` (when the wait ends)
 * clears the timer. Either may be called again for a second wait (a resend after an engine died).
 * Never throws; writes nothing to a response that has closed.
 */
export class ProgressComments {
  private timer: NodeJS.Timeout | null = null;
  private watchingClose = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly requested: string,
    /** What the wait is for now (the gateway's waitProgress), or null when it cannot say. */
    private readonly progress: () => WaitProgress | null,
    private readonly errorEvent: ErrorEvent,
  ) {}

  start(): void {
    if (this.res.destroyed || this.res.writableEnded) return;
    this.stop();
    // Made for every streamed request, started only for those that wait: nothing is set up
    // on the hot path until then.
    if (!this.watchingClose) {
      this.watchingClose = true;
      this.res.once('close', () => this.stop());
    }
    openStream(this.res, this.errorEvent);
    const since = performance.now();
    const tell = (): void => {
      if (this.res.destroyed || this.res.writableEnded) return this.stop();
      this.res.write(progressComment(progressText(this.requested, this.progress(), performance.now() - since)));
    };
    tell();
    this.timer = setInterval(tell, PROGRESS_INTERVAL_MS);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
