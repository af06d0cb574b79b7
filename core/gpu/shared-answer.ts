// One answer to a slow question, shared by everyone who asks while it is fresh.
//
// Several readers here ask a driver tool the same thing seconds apart (nvidia-smi's process
// list, llama-server's device list, amd-smi's static description), and each answer costs a
// process spawn. A question in flight is joined rather than asked twice; a failed answer is
// not kept, so the next caller asks again instead of living with one bad moment. An answer's
// age is taken on the monotonic clock (core/common/clock.ts), so a wall-clock step neither keeps
// a stale one nor asks again at once.
import type { Clock } from '../common/clock.js';

/**
 * Wraps `query` so that calls within `freshForMs` of the last asked one get its answer
 * (Infinity: ask until one succeeds, then never again). Never blocks by itself; the returned
 * promise settles when the query does.
 */
export function sharedAnswer<T>(query: () => Promise<T>, clock: Pick<Clock, 'elapsed'>, freshForMs: number): () => Promise<T> {
  let last: { at: number; answer: Promise<T> } | null = null;
  return () => {
    if (last !== null && clock.elapsed() - last.at < freshForMs) return last.answer;
    const answer = query();
    const entry = { at: clock.elapsed(), answer };
    last = entry;
    answer.catch(() => {
      if (last === entry) last = null;
    });
    return answer;
  };
}
