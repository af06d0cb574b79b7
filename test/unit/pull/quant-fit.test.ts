import { describe, expect, test } from 'vitest';
import { PullRefused } from '../../../core/contracts/hub/pulls.js';
import type { FootprintEstimate } from '../../../core/policy/levels.js';
import { chooseByFit, type MachineRoom } from '../../../core/pull/quant-fit.js';

const GiB = 1024 ** 3;
// One 32-layer model; the base estimate is its 4 GiB quant's: 4 GiB of weights, 1 GiB of KV at 8192 tokens, 0.5 GiB compute.
const base: FootprintEstimate = { weightsBytes: 4 * GiB, kvBytesPerToken: GiB / 8192, contextTokens: 8192, computeBytes: GiB / 2, layers: 32 };
const candidates = [
  { quant: 'Q2_K', sizeBytes: 2 * GiB },
  { quant: 'Q4_K_M', sizeBytes: 4 * GiB },
  { quant: 'Q8_0', sizeBytes: 8 * GiB },
  { quant: 'F16', sizeBytes: 16 * GiB },
];
const gpu = (budgetGiB: number, hostGiB = 64): MachineRoom => ({ mode: 'gpu', gpus: [{ index: 0, name: 'RTX 4090', budgetBytes: budgetGiB * GiB }], hostBytes: hostGiB * GiB });

describe('chooseByFit', () => {
  test('the largest quant that runs whole on a GPU at the default context, saying what the next one up would need', () => {
    const choice = chooseByFit(candidates, base, 1, gpu(12));
    expect(candidates[choice.index]!.quant).toBe('Q8_0');
    expect(choice.why).toBe('Q8_0 (8 GiB) is the largest quant that runs whole on GPU 0 RTX 4090 (12 GiB for models) at 8192 tokens of context: it needs 9.5 GiB; F16 (16 GiB) would need 17.5 GiB');
  });

  test('on the largest of several GPUs', () => {
    const room: MachineRoom = { mode: 'gpu', gpus: [{ index: 0, name: 'small', budgetBytes: 4 * GiB }, { index: 1, name: 'big', budgetBytes: 20 * GiB }], hostBytes: 8 * GiB };
    expect(candidates[chooseByFit(candidates, base, 1, room).index]!.quant).toBe('F16');
  });

  test('none whole: the largest that runs partly offloaded, with where its bytes go', () => {
    const choice = chooseByFit(candidates, base, 1, gpu(3, 24));
    // At the partial level the policy keeps a set share of the layers on the GPU (core/policy/levels.ts): Q8_0's share would not fit in 3 GiB.
    expect(candidates[choice.index]!.quant).toBe('Q4_K_M');
    expect(choice.why).toBe('no quant runs whole on GPU 0 RTX 4090 (3 GiB for models): the smallest, Q2_K (2 GiB), needs 3.5 GiB; Q4_K_M (4 GiB) is the largest that runs partly offloaded: 2.6 GiB on the GPU, 2.1 GiB in host RAM, at 2048 tokens of context');
  });

  test('without a GPU: the largest that fits in host RAM', () => {
    const choice = chooseByFit(candidates, base, 1, { mode: 'cpu', gpus: [], hostBytes: 7 * GiB });
    expect(candidates[choice.index]!.quant).toBe('Q4_K_M');
    expect(choice.why).toContain('is the largest quant that fits in host RAM here (no GPU llmtray can use)');
  });

  test('nothing runs here: refused naming what the smallest needs and how to pull one anyway', () => {
    let refused: unknown;
    try {
      chooseByFit(candidates, base, 1, { mode: 'cpu', gpus: [], hostBytes: 1 * GiB });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(PullRefused);
    expect((refused as PullRefused).message).toBe('No quant of this model runs here: the smallest, Q2_K (2 GiB), needs 2.8 GiB of host RAM; this machine has no GPU llmtray can use and 1 GiB of host RAM free. Name a quant to pull it anyway (hf.co/OWNER/REPO:QUANT), or pick a smaller model.');
  });
});
