// gpu-check's command line (scripts/gpu-check/options.ts) and the parts of its speed phase that
// need no GPU (scripts/gpu-check/speed.ts): what it races, the rounds it reads, and how it
// reads an engine's log before it calls a figure a GPU figure.
import { afterEach, describe, expect, it } from 'vitest';
import { parseOptions } from '../../scripts/gpu-check/options.js';
import { DEFAULT_RACE_ROUNDS, offloadLines, offloadOf, raceRounds, speedPlan } from '../../scripts/gpu-check/speed.js';

describe('gpu-check options', () => {
  it('runs the memory checks and then the speed phase, the race and the returning conversation, by default', () => {
    expect(parseOptions([])).toEqual({ placements: ['gpu', 'split', 'partial'], workDir: null, memory: true, speed: true, returning: true });
  });

  it('leaves the returning conversation out with --no-return, and with the whole speed phase', () => {
    expect(parseOptions(['--no-return'])).toMatchObject({ memory: true, speed: true, returning: false });
    expect(parseOptions(['--only', 'speed', '--no-return'])).toMatchObject({ memory: false, speed: true, returning: false });
    expect(parseOptions(['--no-speed'])).toMatchObject({ speed: false, returning: false });
    expect(() => parseOptions(['--no-returns'])).toThrow("unknown argument '--no-returns'");
  });

  it('leaves the race out with --no-speed, and the memory checks out with --only speed', () => {
    expect(parseOptions(['--no-speed', '--placements', 'gpu'])).toMatchObject({ placements: ['gpu'], memory: true, speed: false });
    expect(parseOptions(['--only', 'speed'])).toMatchObject({ memory: false, speed: true });
  });

  it('refuses an --only it does not know, naming the value and the one it takes', () => {
    expect(() => parseOptions(['--only', 'memory'])).toThrow("--only: unknown 'memory'; expected speed");
    expect(() => parseOptions(['--only', 'speeed'])).toThrow("unknown 'speeed'");
    // --only with no value is an argument it does not know.
    expect(() => parseOptions(['--only'])).toThrow("unknown argument '--only'");
  });

  it('refuses combinations that would leave nothing to run or ask for checks it would not run', () => {
    expect(() => parseOptions(['--only', 'speed', '--no-speed'])).toThrow('leave nothing to run');
    expect(() => parseOptions(['--only', 'speed', '--placements', 'gpu'])).toThrow('--placements chooses memory checks');
    expect(() => parseOptions(['--speed'])).toThrow("unknown argument '--speed'");
    expect(() => parseOptions(['--placements', 'gpu,cpu'])).toThrow('--placements: unknown cpu');
  });
});

describe('gpu-check speed phase, without a GPU', () => {
  const saved = process.env.LLMTRAY_RACE_ROUNDS;
  afterEach(() => {
    if (saved === undefined) delete process.env.LLMTRAY_RACE_ROUNDS;
    else process.env.LLMTRAY_RACE_ROUNDS = saved;
  });

  it('races demo-chat and Llama 3.2 1B Q8_0, and Q4_K_M only where a llama-quantize is found', () => {
    const without = speedPlan(null);
    expect(without.models.map((m) => m.label)).toEqual(['demo-chat (f16, 46 MiB, 358 tokens), every layer on the GPU', 'llama-3.2-1b Q8_0, every layer on the GPU']);
    expect(without.skipped).toEqual([expect.stringMatching(/^llama-3\.2-1b Q4_K_M: not raced: no llama-quantize/)]);
    const withQuantize = speedPlan('/opt/llama/llama-quantize');
    expect(withQuantize.models.map((m) => (m.kind === 'real-shape' ? `${m.shape} ${m.quant}` : m.kind))).toEqual(['demo-chat', 'llama-3.2-1b Q8_0', 'llama-3.2-1b Q4_K_M']);
    expect(withQuantize.skipped).toEqual([]);
  });

  it('reads LLMTRAY_RACE_ROUNDS, 3 without it, and refuses anything but a whole number by name', () => {
    delete process.env.LLMTRAY_RACE_ROUNDS;
    expect(raceRounds()).toBe(DEFAULT_RACE_ROUNDS);
    expect(DEFAULT_RACE_ROUNDS).toBe(3);
    process.env.LLMTRAY_RACE_ROUNDS = '1';
    expect(raceRounds()).toBe(1);
    process.env.LLMTRAY_RACE_ROUNDS = '0';
    expect(() => raceRounds()).toThrow("LLMTRAY_RACE_ROUNDS must be a whole number of rounds, at least 1; got '0'");
  });

  it("calls a contender's figures GPU figures only when every start's log says every layer was offloaded", () => {
    const full = ['llama_model_load: ...', 'load_tensors: offloaded 17/17 layers to GPU', 'model loaded'];
    const part = ['load_tensors: offloaded 9/17 layers to GPU'];
    expect(offloadOf(full)).toEqual({ offloaded: 17, total: 17 });
    expect(offloadOf(['model loaded'])).toBeNull();
    const lines = offloadLines(
      new Map([
        ['llama-server', [full, full]],
        ['embedded', [full, part]],
        ['embedded (other build)', [['model loaded'], ['model loaded']]],
        ['never started', []],
      ]),
    );
    expect(lines).toEqual([
      "  llama-server: every start's log says 17/17 layers offloaded to the GPU",
      '  embedded: NOT ALL ON THE GPU: its logs said 17/17, 9/17 layers offloaded',
      '  embedded (other build): NOT CONFIRMED ON THE GPU: its log never said it offloaded layers (2 starts); read its figures as unverified, maybe the CPU\'s',
      "  never started: NOT CONFIRMED ON THE GPU: its log never said it offloaded layers (0 starts); read its figures as unverified, maybe the CPU's",
    ]);
  });
});
