// What gpu-check's returning conversation runs (returning.ts), decided without starting anything
// so that it is unit-tested on a machine without a GPU: on which models (the race's, speed.ts),
// engines and conversation sizes, how many rounds, and what it leaves out and why.
import { DEMO_SHAPES } from '../../core/catalog/demo/demo-models.js';
import { roundsFromEnv } from '../../test/bench/bench-env.js';
import { contextFor, REAL_TOKENS, type ReturnEngine } from '../../test/bench/returning-conversation-bench.js';
import { REAL_SHAPES } from '../../test/bench/real-shape/real-shape-models.js';
import type { RacedModel } from './speed.js';

/**
 * Rounds per table where the bench's own variables do not say: fewer than `npm run bench`
 * runs (3 and 2), as the lent machine's minutes are few; on a GPU a round is seconds, spent in
 * the swaps' engine starts, and its figures vary little.
 */
export const DEFAULT_RETURN_ROUNDS = { demo: 2, real: 1 } as const;

/** LLMTRAY_RETURN_ROUNDS (demo-chat) and LLMTRAY_RETURN_REAL_ROUNDS (the real shape), the bench's variables; throws, naming the variable, on anything but a whole number ≥ 1. */
export function returnRounds(): { demo: number; real: number } {
  return {
    demo: roundsFromEnv('LLMTRAY_RETURN_ROUNDS', DEFAULT_RETURN_ROUNDS.demo),
    real: roundsFromEnv('LLMTRAY_RETURN_REAL_ROUNDS', DEFAULT_RETURN_ROUNDS.real),
  };
}

/** One bench run: a model as A on one engine, two daemons (saving and not), a table per size. */
export interface ReturnUnit {
  model: RacedModel;
  engine: ReturnEngine;
  sizes: number[];
  rounds: number;
}

/** The context a model was trained for: a run past it is refused by the daemon. */
function trainedContext(model: RacedModel): number {
  return model.kind === 'demo-chat' ? DEMO_SHAPES['demo-chat'].contextLength : REAL_SHAPES[model.shape].contextLength;
}

/** A model as the plan's lines name it: demo-chat, or the shape and its quantization. */
function modelName(model: RacedModel): string {
  return model.kind === 'demo-chat' ? 'demo-chat' : `${model.shape} ${model.quant}`;
}

/** What a unit's label says: the model and the engine. */
export function unitLabel(unit: Pick<ReturnUnit, 'model' | 'engine'>): string {
  return `${modelName(unit.model)} on ${unit.engine}`;
}

/**
 * Each model on each engine, in the order given (the race's order, engine by engine as the bench
 * runs them), at every conversation size of the bench (~1,500 and ~8,000 tokens) whose context
 * the model was trained for; a size it was not is left out with the reason, once per model.
 */
export function returnPlan(models: readonly RacedModel[], engines: readonly ReturnEngine[], rounds: { demo: number; real: number }): { units: ReturnUnit[]; skipped: string[] } {
  const units: ReturnUnit[] = [];
  const skipped: string[] = [];
  for (const model of models) {
    const trained = trainedContext(model);
    const sizes = REAL_TOKENS.filter((tokens) => contextFor([tokens]) <= trained);
    for (const tokens of REAL_TOKENS.filter((t) => !sizes.includes(t))) {
      skipped.push(`${modelName(model)} at ~${tokens.toLocaleString('en-US')} tokens: not run: the conversation with its answer and the new turn needs a context of ${contextFor([tokens]).toLocaleString('en-US')}, and the model was trained for ${trained.toLocaleString('en-US')}`);
    }
    if (sizes.length === 0) continue;
    for (const engine of engines) units.push({ model, engine, sizes, rounds: model.kind === 'demo-chat' ? rounds.demo : rounds.real });
  }
  return { units, skipped };
}

/** The rounds a unit runs, as the bench runs them: on each of its two daemons, one unmeasured round, then `rounds` at each size. */
export function roundsRun(unit: Pick<ReturnUnit, 'sizes' | 'rounds'>): number {
  return 2 * (1 + unit.rounds * unit.sizes.length);
}
