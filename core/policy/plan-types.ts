// What the policy decides over: the models the system wants resident (Desired), the model
// servers running now (Resident), and the launches and evictions that bring the one to the
// other (Plan). Their own file, below everything that reads them, so that the candidates, the
// shapes of `place` and the one-pool oracle (test/support/schedule-oracle.ts) share them
// without importing each other.
//
// Drafts. A speculative-decoding draft is loaded by its primary's process, so a pair is one
// process: one Desired entry carrying `draft`, one Resident entry whose footprint is primary
// plus draft. The draft's id is only a label for costing and for reasons; it is never
// launched or evicted on its own. When the same id is also desired as a model in its own
// right, that is a second, standalone process with its own entry and its own memory (a
// llama-server cannot share a loaded draft with another server), and it is placed like
// any other model.
import type { LeftOut } from '../contracts/plan.js';

/** The companion model a primary loads for speculative decoding. */
export interface Draft {
  modelId: string;
  /** Device bytes the draft adds to its primary's process. Negative counts as zero. */
  footprint: number;
}

/** A model the system wants resident now. */
export interface Desired {
  /** The catalog id, shared with the engines and the router. */
  modelId: string;
  /** Device bytes at the level it will launch at, without its draft. Negative counts as zero. */
  footprint: number;
  /** Higher is admitted first under memory pressure. */
  priority: number;
  /** Kept whatever the budget says: the person asked for it to stay hot. */
  pinned: boolean;
  draft?: Draft;
  /** When a request last wanted it (any monotonic stamp); absent: its resident's, else never. */
  lastUsed?: number;
  /**
   * When its oldest request still waiting for it arrived (same clock as lastUsed); absent: no
   * request waits. Among models of one priority, those with requests waiting go first, the
   * longest-waiting first: requests for several models are served a model at a time, in the
   * order they came, and no model with waiting requests is passed over for ever.
   */
  waitingSince?: number;
  /**
   * It failed since its last success and is being tried again. It is admitted after every
   * other desired model, and a pin does not force it: its retries may use free memory, or
   * memory held by models nobody wants, but never push out a model that is wanted — a broken
   * model retried on every backoff would otherwise evict a working one each time.
   */
  retrying?: boolean;
}

/** A model server running now, as the engines report it. */
export interface Resident {
  modelId: string;
  /** Device bytes of the whole process: primary plus draft for a pair. Negative counts as zero. */
  footprint: number;
  /** Never evicted. */
  pinned: boolean;
  /** In use: loading, decoding, or held for its turn (core/controller/policy-inputs.ts); evicting it would drop that work, so it is never evicted. */
  inUse: boolean;
  lastUsed: number;
}

/** What converges the resident set on the desired one. Empty launch and evict: converged. */
export interface Plan {
  /** Desired models to start, most important first; none of them is resident. */
  launch: string[];
  /** Resident models to stop, least recently used first; none is pinned or in use. */
  evict: string[];
  /** Desired models left out, most important first, each with a sentence a person can act on. */
  unschedulable: LeftOut[];
}
