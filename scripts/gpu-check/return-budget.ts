// How long gpu-check's returning conversation (returning.ts) may take: its own budget, and the
// end its caller set for the whole of gpu-check (on-device.sh stops gpu-check before the device
// call's limit), whichever comes first. A unit (a model on an engine) starts only when the time
// left holds what it is likely to take, judged from the units before it; what does not start
// is said, so a lent machine's call ends with every table it printed whole.

/**
 * The returning conversation's own seconds where LLMTRAY_RETURN_BUDGET_S does not say: the
 * whole plan with room. An estimate, as no GPU has run it yet: at the default rounds, six units
 * (three models, two engines) of 6 rounds each; a round is two swaps, so two engine starts on
 * the GPU (a CUDA context, the model uploaded from the page cache: a second or two each) and the
 * prefills (the 1B's 8,000 tokens well under a second there), some 3 to 5 s; with each unit's
 * two daemon starts, 2 to 3.5 minutes.
 */
export const DEFAULT_RETURN_BUDGET_S = 240;
/** What gpu-check needs after the last unit, before its caller's end: the unit's daemons stopped, the summary, the exit. */
export const STOP_MARGIN_S = 20;
/**
 * A round's time before any unit has run: two swaps, so two engine starts on the GPU (a CUDA
 * context and the model's upload, seconds), the requests' prefill a fraction of a second there;
 * on the high side, as a guess that is too low runs into the caller's end.
 */
export const FIRST_ROUND_GUESS_MS = 8000;

export interface ReturnBudget {
  /** LLMTRAY_RETURN_BUDGET_S: the most the returning conversation takes, from its start. */
  budgetS: number;
  /** LLMTRAY_GPU_CHECK_ENDS_AT: when the caller stops gpu-check (Unix seconds), or null where none said. */
  endsAtS: number | null;
}

function wholeFromEnv(name: string, atLeast: number, what: string): number | null {
  const value = process.env[name];
  if (value === undefined || value === '') return null;
  const n = Number(value);
  if (!Number.isInteger(n) || n < atLeast) throw new Error(`${name} must be ${what}; got '${value}'`);
  return n;
}

/** The budget the environment sets; throws, naming the variable, on anything but whole seconds. */
export function returnBudget(): ReturnBudget {
  return {
    budgetS: wholeFromEnv('LLMTRAY_RETURN_BUDGET_S', 0, 'a whole number of seconds, 0 or more') ?? DEFAULT_RETURN_BUDGET_S,
    endsAtS: wholeFromEnv('LLMTRAY_GPU_CHECK_ENDS_AT', 1, 'a time in whole Unix seconds'),
  };
}

/** When the returning conversation started at `startedAtMs` must have stopped (Unix ms): its own budget or the caller's end less the margin, the earlier. */
export function returnDeadlineMs(budget: ReturnBudget, startedAtMs: number): number {
  const own = startedAtMs + budget.budgetS * 1000;
  return budget.endsAtS === null ? own : Math.min(own, (budget.endsAtS - STOP_MARGIN_S) * 1000);
}

/** What a unit of `rounds` rounds is likely to take: its rounds at the slowest pace a finished unit ran (daemon starts included), or the first guess before any. */
export function unitEstimateMs(rounds: number, finished: readonly { rounds: number; ms: number }[]): number {
  const pace = finished.length === 0 ? FIRST_ROUND_GUESS_MS : Math.max(...finished.map((unit) => unit.ms / unit.rounds));
  return rounds * pace;
}
