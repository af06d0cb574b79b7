// Following the daemon from the CLI (`llmtray logs -f`, `llmtray activity -f`): a first answer,
// then every event that comes after it, none printed twice and none skipped.
//
// The order that loses nothing: subscribe to the admin event stream first, and ask for the first
// answer only once the stream is live (its first event, the snapshot, proves the subscription is
// in place). Events that arrive before that answer are held, then placed after it; the caller's
// `place` drops what the answer already showed.
import type { AdminEvent } from '../contracts/admin-events.js';
import type { CliAdmin } from './admin-client.js';

/**
 * How following ended: the person stopped it (`signal`), or the daemon's stream ended — closed,
 * or cut as a stopping daemon cuts its connections — after it had begun.
 */
export type FollowEnd = 'stopped' | 'daemon-gone';

export interface FollowSteps<Item> {
  /** The item an event carries for this follow, or null for an event it is not about. */
  pick(event: AdminEvent): Item | null;
  /** Asks for and writes the first answer; a rejection (the daemon's refusal) ends the follow with it. */
  fetch(): Promise<void>;
  /** Writes one item that came after the first answer (or was held while it was asked). */
  place(item: Item): void;
}

/** Follows until `signal` aborts or the daemon's stream ends; rejects when the first answer is refused or the daemon cannot be reached. */
export async function followAfterFirstAnswer<Item>(admin: CliAdmin, steps: FollowSteps<Item>, signal: AbortSignal): Promise<FollowEnd> {
  const held: Item[] = [];
  let answered = false;
  let asked = false;
  let failure: unknown = null;
  const stopOnFailure = new AbortController();
  const fetchFirst = async (): Promise<void> => {
    try {
      await steps.fetch();
      answered = true;
      for (const item of held.splice(0)) steps.place(item);
    } catch (error) {
      failure = error;
      stopOnFailure.abort();
    }
  };
  try {
    await admin.events((event) => {
      if (!asked) {
        asked = true;
        void fetchFirst();
      }
      const item = steps.pick(event);
      if (item === null) return false;
      if (answered) steps.place(item);
      else held.push(item);
      return false;
    }, AbortSignal.any([signal, stopOnFailure.signal]));
  } catch (error) {
    if (failure !== null) throw failure;
    if (signal.aborted) return 'stopped';
    // A daemon that could not be reached at all is the client's "cannot reach" error; one that
    // went away mid-stream is the end of what was followed.
    if (asked) return 'daemon-gone';
    throw error;
  }
  if (failure !== null) throw failure;
  return signal.aborted ? 'stopped' : 'daemon-gone';
}
