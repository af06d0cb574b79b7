// Which injected fault explains a failed request, if any. Pure, so the rule that decides whether
// a request was "lost" is tested on its own (test/unit/soak/explain.test.ts).
//
// A failure is explained only by a fault of a kind that can cause that very error, on the model
// the request asked for (any model for the daemon's kill), while the request was in flight
// between the fault's injection and the moment its model (or the daemon) was back. Anything else
// is a request lost: the product failed a request nobody broke.
import type { FaultKind } from './profiles.js';
import type { Outcome, RequestError } from './request-outcome.js';

export interface FaultRecord {
  id: number;
  kind: FaultKind;
  /** The model it hit; null for the daemon's kill, which hits every model. */
  modelId: string | null;
  /** Epoch ms it was injected. */
  at: number;
  /** Epoch ms its model (or the daemon) was back: the end of the window its effects may show in. */
  until: number;
  /** What the daemon classified it as — the ladder's kind, or what the daemon did — or null when nothing was seen. */
  classifiedAs: string | null;
  /** The kind the soak expects it to be classified as. */
  expected: string;
  /** Whether it took effect as it must (its own request failed as expected, its model recovered, ...). */
  seen: boolean;
  /** What was seen, or what was missing, in a sentence. */
  note: string;
  /** For the daemon's kill: the engines it left, how many the next daemon ended, how many were left, whether the pin held. */
  restart?: { orphans: number; ended: number; left: number; pinKept: boolean };
}

/** The errors each fault may cause a client; an empty list means it must cause none. */
const ENGINE_GONE = ['engine_stream_interrupted', 'engine_unreachable', 'engine_interrupted'];
const CAUSES: Record<FaultKind, (error: RequestError) => boolean> = {
  crash: (e) => (e.class === 'stream-event' || e.class === 'http') && ENGINE_GONE.includes(e.code ?? ''),
  hang: (e) => (e.class === 'stream-event' || e.class === 'http') && (e.code === 'engine_hung' || ENGINE_GONE.includes(e.code ?? '')),
  invalid: (e) => e.class === 'http' && e.status === 503 && e.code === 'model_quarantined',
  // A dead daemon answers nothing: its clients see refused or cut connections.
  'daemon-kill': (e) => e.class === 'connection',
  // Only the request the client itself aborted (matched by its fault id below).
  'client-abort': (e) => e.class === 'aborted',
  // Recovered inside the daemon: a request waiting for these models must get its answer.
  oom: () => false,
  'slow-load': () => false,
};

export type Explanation = { fault: FaultRecord } | { fault: null; why: string };

/** The fault that explains `outcome`'s failure, or why none does. Call only for failed outcomes. */
export function explain(outcome: Outcome, faults: readonly FaultRecord[]): Explanation {
  const error = outcome.error;
  if (error === null) return { fault: null, why: 'it did not fail' };
  for (const fault of faults) {
    if (fault.kind === 'client-abort' && outcome.faultId !== fault.id) continue;
    if (fault.modelId !== null && fault.modelId !== outcome.model) continue;
    if (outcome.startedAt > fault.until || outcome.endedAt < fault.at) continue;
    if (CAUSES[fault.kind](error)) return { fault };
  }
  return { fault: null, why: `no injected fault on ${outcome.model} can cause ${describeError(error)} between ${new Date(outcome.startedAt).toISOString()} and ${new Date(outcome.endedAt).toISOString()}` };
}

/**
 * Whether a client got OpenAI's error shape: a status with `error.type/code/message`, or, in a
 * stream that had answered 200, an error event with the same three. Pure.
 */
export function isOpenAIShaped(error: RequestError): boolean {
  const body = error.type !== null && error.type !== '' && error.code !== null && error.code !== '' && error.message !== '';
  if (error.class === 'http') return error.status !== null && body;
  return error.class === 'stream-event' && body;
}

/** One error in a few words: "503 model_quarantined", "stream error engine_hung", "connection (ECONNRESET)". */
export function describeError(error: RequestError): string {
  switch (error.class) {
    case 'http':
      return `${error.status} ${error.code ?? error.type ?? ''}`.trim();
    case 'stream-event':
      return `stream error ${error.code ?? error.type ?? ''}`.trim();
    case 'connection':
      return `connection${error.code === null ? '' : ` (${error.code})`}`;
    default:
      return `${error.class}: ${error.message}`;
  }
}
