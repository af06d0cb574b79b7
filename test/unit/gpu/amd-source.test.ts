import { describe, expect, it } from 'vitest';
import { createAmdReader } from '../../../core/gpu/amd-source.js';
import type { ExecFileText } from '../../../core/gpu/exec-file.js';
import { toolOutput } from '../../support/gpu-tool-output.js';

const MiB = 1024 ** 2;

/** What execFileText rejects with when the tool is not on PATH. */
const missing = (file: string): Error => new Error(`${file} failed: spawn ${file} ENOENT`, { cause: Object.assign(new Error(`spawn ${file} ENOENT`), { code: 'ENOENT' }) });

function tools(answers: Record<string, () => string>): { exec: ExecFileText; calls: string[] } {
  const calls: string[] = [];
  const exec: ExecFileText = async (file, args) => {
    calls.push([file, ...args].join(' '));
    const answer = answers[[file, ...args].join(' ')] ?? answers[file];
    if (answer === undefined) throw missing(file);
    return answer();
  };
  return { exec, calls };
}

describe('createAmdReader', () => {
  it('asks amd-smi static once and its memory every time, joining them by card', async () => {
    const { exec, calls } = tools({
      'amd-smi static --json': () => toolOutput('amd-smi-static-r9700x4.json'),
      'amd-smi metric --mem-usage --json': () => toolOutput('amd-smi-metric-r9700.json'),
    });
    const read = createAmdReader({ exec });
    const first = await read();
    await read();
    expect(calls).toEqual(['amd-smi static --json', 'amd-smi metric --mem-usage --json', 'amd-smi metric --mem-usage --json']);
    expect(first.source).toBe('amd-smi');
    expect(first.cards.map((c) => [c.busAddress, c.usedBytes])).toEqual([
      ['0000:03:00.0', (32624 - 4501) * MiB],
      ['0000:23:00.0', null],
      ['0000:83:00.0', null],
      ['0000:c3:00.0', null],
    ]);
  });

  it('reads rocm-smi where amd-smi is not installed', async () => {
    const { exec } = tools({ 'rocm-smi': () => toolOutput('rocm-smi-rx6700xt-rocm612.json') });
    const reading = await createAmdReader({ exec })();
    expect(reading).toEqual({ source: 'rocm-smi', cards: [expect.objectContaining({ busAddress: '0000:07:00.0', usedBytes: 1572745216 })], notes: [] });
  });

  it('with neither tool installed, measures nothing, says nothing, and never asks again', async () => {
    const { exec, calls } = tools({});
    const read = createAmdReader({ exec });
    expect(await read()).toEqual({ source: null, cards: [], notes: [] });
    expect(await read()).toEqual({ source: null, cards: [], notes: [] });
    expect(calls).toEqual(['amd-smi static --json', 'rocm-smi --showproductname --showbus --showmeminfo vram --json']);
  });

  it('on a machine where amd-smi finds no GPU, asks no memory', async () => {
    const { exec, calls } = tools({ 'amd-smi static --json': () => '[]' });
    expect(await createAmdReader({ exec })()).toEqual({ source: 'amd-smi', cards: [], notes: [] });
    expect(calls).toEqual(['amd-smi static --json']);
  });

  it('says why when an installed tool fails before it ever answered', async () => {
    const { exec } = tools({ 'amd-smi': () => { throw new Error('amd-smi static --json failed: Command failed: amdsmi_init failed'); }, 'rocm-smi': () => toolOutput('rocm-smi-no-card.txt') });
    const reading = await createAmdReader({ exec })();
    expect(reading.cards).toEqual([]);
    expect(reading.notes).toEqual([expect.stringMatching(/^AMD GPUs cannot be measured: amd-smi static --json failed: Command failed: amdsmi_init failed; rocm-smi printed no JSON: "WARNING: No JSON data to report"\.$/)]);
  });

  it('rejects when the tool that answered before fails now, so the last sample is kept', async () => {
    let broken = false;
    const { exec } = tools({
      'rocm-smi': () => {
        if (broken) throw new Error('rocm-smi failed: timed out');
        return toolOutput('rocm-smi-rx6700xt-rocm612.json');
      },
    });
    const read = createAmdReader({ exec });
    await read();
    broken = true;
    await expect(read()).rejects.toThrow(/rocm-smi answered before and fails now: .*rocm-smi failed: timed out/);
  });
});
