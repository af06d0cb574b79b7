// gpu-check's speed phase, after the race: the returning conversation of `npm run bench`
// (test/bench/returning-conversation-bench.ts) with every layer on the GPU: per model and engine,
// a conversation of ~1,500 (and ~8,000) tokens swapped out and back, its first token with the
// saved conversation against without, in the bench's own table. Like the race it prints and
// claims nothing else, and each unit's tables are followed by what the engines' logs said about
// where their layers went.
//
// What runs is return-plan.ts's (the race's models, the engines found, the sizes each model's
// context allows); how long, return-budget.ts's: a unit starts only when the time left holds it,
// and what does not start is said.
import type { ChildProcess } from 'node:child_process';
import type { DemoModels } from '../../core/catalog/demo/demo-models.js';
import { removeBenchFiles } from '../../test/bench/bench-models.js';
import { observeSpawns, recordLines } from '../../test/bench/engine-process.js';
import { benchReturningConversation, demoChatRun, realShapeRun, returnEngines, type ReturnRun } from '../../test/bench/returning-conversation-bench.js';
import { realShapeModel } from '../../test/bench/real-shape/real-shape-models.js';
import { returnDeadlineMs, unitEstimateMs, type ReturnBudget } from './return-budget.js';
import { returnPlan, roundsRun, unitLabel, type ReturnUnit } from './return-plan.js';
import { GPU_LAYERS, offloadLines, type RacedModel } from './speed.js';

export interface ReturnOutcome {
  /** Units (a model on an engine) run, failed, and not started for want of time. */
  ran: string[];
  failed: string[];
  outOfTime: string[];
  /** What the plan left out: a size past a model's context. */
  leftOut: string[];
}

/**
 * Keeps the lines of every process this process starts, until the returned stop is called, and
 * gives them per start of A's file and of B's: a start is the model's whose file its command line
 * or its log names (an embedded engine adopted from a warm spare gets its argv on stdin, and logs
 * "loading model '…'"; llama-server logs the file it loads). Others (nvidia-smi, lspci) name none.
 */
function engineLogs(paths: { chat: string; tiny: string }): { logs: () => { chat: string[][]; tiny: string[][] }; stop: () => void } {
  const started: { args: readonly string[]; lines: string[] }[] = [];
  const stop = observeSpawns((child: ChildProcess) => {
    const start = { args: child.spawnargs, lines: [] as string[] };
    started.push(start);
    recordLines(child, ({ text }) => start.lines.push(text));
  });
  const of = (path: string): string[][] => started.filter((s) => s.args.includes(path) || s.lines.some((line) => line.includes(path))).map((s) => s.lines);
  return { logs: () => ({ chat: of(paths.chat), tiny: of(paths.tiny) }), stop };
}

async function runOf(unit: ReturnUnit, models: DemoModels, say: (line: string) => void): Promise<ReturnRun> {
  if (unit.model.kind === 'demo-chat') return demoChatRun(unit.engine, { chat: models.chat.path, tiny: models.tiny.path }, unit.rounds, unit.sizes, GPU_LAYERS);
  // The race made it (and kept it in the cache) unless it failed before; made here then.
  const model = await realShapeModel(unit.model.shape, unit.model.quant, say);
  return realShapeRun(unit.engine, model.label, { chat: model.path, tiny: models.tiny.path }, unit.rounds, unit.sizes, GPU_LAYERS);
}

/**
 * Runs the returning conversation on `planned` (the race's models) with every engine found,
 * `rounds` per table, within `budget` from now, printing the bench's tables, the offload lines
 * per unit and a summary. A unit that fails is reported and the next one tried.
 */
export async function runReturnPhase(
  planned: readonly RacedModel[],
  models: DemoModels,
  rounds: { demo: number; real: number },
  budget: ReturnBudget,
  say: (line: string) => void,
): Promise<ReturnOutcome> {
  const startedAt = Date.now();
  const deadline = returnDeadlineMs(budget, startedAt);
  const engines = returnEngines();
  const plan = returnPlan(planned, engines.map((e) => e.engine), rounds);
  const outcome: ReturnOutcome = { ran: [], failed: [], outOfTime: [], leftOut: [...plan.skipped] };
  const finished: { rounds: number; ms: number }[] = [];
  say('');
  say(`## speed: a returning conversation after a swap, every layer on the GPU (gpuLayers ${GPU_LAYERS}), saved against not saved; ${rounds.demo} rounds on demo-chat, ${rounds.real} on each real shape, after one unmeasured (LLMTRAY_RETURN_ROUNDS, LLMTRAY_RETURN_REAL_ROUNDS)`);
  say(`engines: ${engines.map((e) => e.engine).join(', ')}${engines.length === 1 ? ' (no llama-server: set LLMTRAY_LLAMA_SERVER to run its half)' : ''}`);
  say(`time: at most ${(Math.max(0, deadline - startedAt) / 1000).toFixed(0)} s (LLMTRAY_RETURN_BUDGET_S ${budget.budgetS}${budget.endsAtS === null ? '' : `; gpu-check ends at ${new Date(budget.endsAtS * 1000).toISOString()}, LLMTRAY_GPU_CHECK_ENDS_AT`}); a unit starts only when what is left holds it`);
  say(`planned: ${plan.units.map((u) => `${unitLabel(u)} at ${u.sizes.map((t) => `~${t}`).join(' and ')} tokens`).join('; ')}`);
  for (const line of plan.skipped) say(`return: ${line}`);
  /** Whether what is left holds `unit`; says so when it does not. */
  const fits = (unit: ReturnUnit): boolean => {
    const estimate = unitEstimateMs(roundsRun(unit), finished);
    const left = deadline - Date.now();
    if (estimate <= left) return true;
    say(`return: ${unitLabel(unit)}: not run: ${(Math.max(0, left) / 1000).toFixed(0)} s left of the time, and its ${roundsRun(unit)} rounds would take about ${(estimate / 1000).toFixed(0)} s`);
    outcome.outOfTime.push(unitLabel(unit));
    return false;
  };
  try {
    for (const unit of plan.units) {
      const label = unitLabel(unit);
      if (!fits(unit)) continue;
      const llamaServer = engines.find((e) => e.engine === unit.engine)?.llamaServer ?? null;
      try {
        const run = await runOf(unit, models, say);
        // Writing a real shape the race did not leave in the cache takes a while: asked again after it.
        if (!fits(unit)) continue;
        const { logs, stop } = engineLogs(run.paths);
        const started = Date.now();
        try {
          await benchReturningConversation(run, llamaServer);
        } finally {
          stop();
        }
        finished.push({ rounds: roundsRun(unit), ms: Date.now() - started });
        say(`(${label}: ${((Date.now() - started) / 1000).toFixed(0)} s)`);
        const starts = logs();
        for (const line of offloadLines(new Map([[`${run.label} (A) on ${unit.engine}`, starts.chat], [`demo-tiny (B) on ${unit.engine}`, starts.tiny]]))) say(line);
        outcome.ran.push(label);
      } catch (error) {
        say(`return: ${label}: not run: ${error instanceof Error ? error.message : String(error)}`);
        outcome.failed.push(label);
      }
    }
  } finally {
    await removeBenchFiles();
  }
  say(
    `return: ran ${outcome.ran.length} of ${plan.units.length} planned (a model on an engine)` +
      `${outcome.failed.length > 0 ? `; failed: ${outcome.failed.join('; ')}` : ''}${outcome.outOfTime.length > 0 ? `; not started for want of time: ${outcome.outOfTime.join('; ')}` : ''}` +
      `; ${((Date.now() - startedAt) / 1000).toFixed(0)} s`,
  );
  return outcome;
}
