// gpu-check's returning conversation where it needs no GPU: what it plans to run
// (scripts/gpu-check/return-plan.ts), the runs it hands the bench, and how long it lets itself
// take (scripts/gpu-check/return-budget.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_RETURN_BUDGET_S, FIRST_ROUND_GUESS_MS, returnBudget, returnDeadlineMs, STOP_MARGIN_S, unitEstimateMs } from '../../scripts/gpu-check/return-budget.js';
import { DEFAULT_RETURN_ROUNDS, returnPlan, returnRounds, roundsRun, unitLabel } from '../../scripts/gpu-check/return-plan.js';
import { GPU_LAYERS, speedPlan } from '../../scripts/gpu-check/speed.js';
import { demoChatRun, realShapeRun } from '../../test/bench/returning-conversation-bench.js';

const VARIABLES = ['LLMTRAY_RETURN_ROUNDS', 'LLMTRAY_RETURN_REAL_ROUNDS', 'LLMTRAY_RETURN_BUDGET_S', 'LLMTRAY_GPU_CHECK_ENDS_AT'] as const;
const saved = new Map(VARIABLES.map((name) => [name, process.env[name]]));
afterEach(() => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe('gpu-check returning conversation: the plan', () => {
  it("runs the race's models on each engine found, ~1,500 tokens everywhere and ~8,000 only where the model's context holds it", () => {
    const plan = returnPlan(speedPlan(null).models, ['embedded', 'llama-server'], { demo: 2, real: 1 });
    expect(plan.units.map((u) => [unitLabel(u), u.sizes, u.rounds])).toEqual([
      ['demo-chat on embedded', [1500], 2],
      ['demo-chat on llama-server', [1500], 2],
      ['llama-3.2-1b Q8_0 on embedded', [1500, 8000], 1],
      ['llama-3.2-1b Q8_0 on llama-server', [1500, 8000], 1],
    ]);
    // demo-chat was trained for 8,192 tokens: the 8,000-token conversation with its answer and the next turn needs 10,240.
    expect(plan.skipped).toEqual(['demo-chat at ~8,000 tokens: not run: the conversation with its answer and the new turn needs a context of 10,240, and the model was trained for 8,192']);
  });

  it('follows the race on Q4_K_M (only with a llama-quantize) and runs the embedded engine alone where no llama-server is found', () => {
    const plan = returnPlan(speedPlan('/opt/llama/llama-quantize').models, ['embedded'], { demo: 3, real: 2 });
    expect(plan.units.map((u) => [unitLabel(u), u.sizes, u.rounds])).toEqual([
      ['demo-chat on embedded', [1500], 3],
      ['llama-3.2-1b Q8_0 on embedded', [1500, 8000], 2],
      ['llama-3.2-1b Q4_K_M on embedded', [1500, 8000], 2],
    ]);
  });

  it("counts a unit's rounds as the bench runs them: on each of two daemons, one unmeasured, then the rounds at each size", () => {
    expect(roundsRun({ sizes: [1500], rounds: 2 })).toBe(6);
    expect(roundsRun({ sizes: [1500, 8000], rounds: 1 })).toBe(6);
    expect(roundsRun({ sizes: [1500, 8000], rounds: 3 })).toBe(14);
  });

  it("hands the bench every layer on the GPU, in the bench's own setups: demo-chat in 4,096 tokens of context on 1 thread, a real shape in 10,240 on 2", () => {
    const paths = { chat: '/m/chat.gguf', tiny: '/m/tiny.gguf' };
    expect(demoChatRun('embedded', paths, 2, [1500], GPU_LAYERS)).toMatchObject({ label: 'demo-chat', ctx: 4096, threads: 1, sizes: [1500], rounds: 2, gpuLayers: 999 });
    expect(realShapeRun('llama-server', 'llama-3.2-1b Q8_0', paths, 1, [1500, 8000], GPU_LAYERS)).toMatchObject({ ctx: 10_240, threads: 2, sizes: [1500, 8000], gpuLayers: 999 });
    // The bench's own runs stay on the CPU.
    expect(demoChatRun('embedded', paths, 3).gpuLayers).toBe(0);
  });

  it("reads the bench's round variables, 2 and 1 without them, and refuses anything but a whole number by name", () => {
    for (const name of VARIABLES) delete process.env[name];
    expect(returnRounds()).toEqual({ demo: 2, real: 1 });
    expect(DEFAULT_RETURN_ROUNDS).toEqual({ demo: 2, real: 1 });
    process.env.LLMTRAY_RETURN_REAL_ROUNDS = '3';
    expect(returnRounds()).toEqual({ demo: 2, real: 3 });
    process.env.LLMTRAY_RETURN_ROUNDS = 'two';
    expect(() => returnRounds()).toThrow("LLMTRAY_RETURN_ROUNDS must be a whole number of rounds, at least 1; got 'two'");
  });
});

describe('gpu-check returning conversation: the time it takes', () => {
  it('takes LLMTRAY_RETURN_BUDGET_S (240 without it; 0 runs nothing) and the end LLMTRAY_GPU_CHECK_ENDS_AT sets, and refuses anything but whole seconds by name', () => {
    for (const name of VARIABLES) delete process.env[name];
    expect(returnBudget()).toEqual({ budgetS: DEFAULT_RETURN_BUDGET_S, endsAtS: null });
    expect(DEFAULT_RETURN_BUDGET_S).toBe(240);
    process.env.LLMTRAY_RETURN_BUDGET_S = '0';
    process.env.LLMTRAY_GPU_CHECK_ENDS_AT = '1765000000';
    expect(returnBudget()).toEqual({ budgetS: 0, endsAtS: 1_765_000_000 });
    process.env.LLMTRAY_RETURN_BUDGET_S = '1.5';
    expect(() => returnBudget()).toThrow("LLMTRAY_RETURN_BUDGET_S must be a whole number of seconds, 0 or more; got '1.5'");
    process.env.LLMTRAY_RETURN_BUDGET_S = '60';
    process.env.LLMTRAY_GPU_CHECK_ENDS_AT = 'soon';
    expect(() => returnBudget()).toThrow("LLMTRAY_GPU_CHECK_ENDS_AT must be a time in whole Unix seconds; got 'soon'");
  });

  it("stops at its own budget or at the caller's end less the margin, whichever comes first", () => {
    const start = 1_765_000_000_000;
    expect(returnDeadlineMs({ budgetS: 240, endsAtS: null }, start)).toBe(start + 240_000);
    // The caller ends gpu-check 100 s from now: the margin is kept for the summary and the daemons' stop.
    expect(returnDeadlineMs({ budgetS: 240, endsAtS: start / 1000 + 100 }, start)).toBe(start + (100 - STOP_MARGIN_S) * 1000);
    expect(returnDeadlineMs({ budgetS: 30, endsAtS: start / 1000 + 100 }, start)).toBe(start + 30_000);
    // An end already past leaves a deadline before now: nothing starts.
    expect(returnDeadlineMs({ budgetS: 240, endsAtS: start / 1000 - 5 }, start)).toBeLessThan(start);
  });

  it("judges a unit's time by the slowest pace of the units before it, and by a first guess before any", () => {
    expect(unitEstimateMs(6, [])).toBe(6 * FIRST_ROUND_GUESS_MS);
    // 6 rounds in 18 s (3 s a round) and 6 in 30 s (5 s a round): the slower pace counts.
    expect(unitEstimateMs(10, [{ rounds: 6, ms: 18_000 }, { rounds: 6, ms: 30_000 }])).toBe(50_000);
  });
});
