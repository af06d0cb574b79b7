import { describe, expect, it } from 'vitest';
import { joinAmdSmi, parseAmdSmiMetric, parseAmdSmiStatic } from '../../../core/gpu/amd-smi.js';
import { toolOutput } from '../../support/gpu-tool-output.js';

const MiB = 1024 ** 2;

describe('parseAmdSmiStatic on amd-smi 26.2.1 (4x Radeon AI PRO R9700)', () => {
  it('names every GPU and keys it by its PCI address, VRAM in MiB', () => {
    expect(parseAmdSmiStatic(toolOutput('amd-smi-static-r9700x4.json'))).toEqual([
      { gpu: 0, busAddress: '0000:03:00.0', name: 'AMD Radeon AI PRO R9700', totalBytes: 32624 * MiB },
      { gpu: 1, busAddress: '0000:23:00.0', name: 'AMD Radeon AI PRO R9700', totalBytes: 32624 * MiB },
      { gpu: 2, busAddress: '0000:83:00.0', name: 'AMD Radeon AI PRO R9700', totalBytes: 32624 * MiB },
      { gpu: 3, busAddress: '0000:c3:00.0', name: 'AMD Radeon AI PRO R9700', totalBytes: 32624 * MiB },
    ]);
  });

  it('reads the bare array older versions print, and names an unnamed GPU by its index', () => {
    const stdout = '[{"gpu": 0, "asic": {"market_name": "N/A"}, "bus": {"bdf": "0000:65:00.0"}, "vram": {"size": "N/A"}}]';
    expect(parseAmdSmiStatic(stdout)).toEqual([{ gpu: 0, busAddress: '0000:65:00.0', name: 'AMD GPU 0', totalBytes: null }]);
  });
});

describe('parseAmdSmiMetric', () => {
  it('reads total and used VRAM of a loaded card, used = total − free', () => {
    expect(parseAmdSmiMetric(toolOutput('amd-smi-metric-r9700.json'))).toEqual([
      { gpu: 0, busAddress: '0000:03:00.0', totalBytes: 32624 * MiB, usedBytes: (32624 - 4501) * MiB },
    ]);
  });

  it('falls back to used_vram without free_vram, and leaves a card with "N/A" unmeasured', () => {
    const stdout = '{"gpu_data": [{"gpu": 0, "mem_usage": {"total_vram": {"value": 196288, "unit": "MB"}, "used_vram": {"value": 2531, "unit": "MB"}}},'
      + ' {"gpu": 1, "mem_usage": {"total_vram": "N/A", "used_vram": "N/A", "free_vram": "N/A"}}]}';
    expect(parseAmdSmiMetric(stdout)).toEqual([
      { gpu: 0, busAddress: null, totalBytes: 196288 * MiB, usedBytes: 2531 * MiB },
      { gpu: 1, busAddress: null, totalBytes: null, usedBytes: null },
    ]);
  });

  it('skips a warning banner before the JSON', () => {
    const stdout = 'WARNING: User is missing the following required groups: render, video. Please add user to these groups.\n'
      + '[{"gpu": 0, "mem_usage": {"total_vram": {"value": 24560, "unit": "MB"}, "free_vram": {"value": 24000, "unit": "MB"}}}]';
    expect(parseAmdSmiMetric(stdout)[0]?.usedBytes).toBe(560 * MiB);
  });

  it('throws, quoting the output, when there is no JSON at all', () => {
    expect(() => parseAmdSmiMetric('ERROR:root:Unable to detect any GPU devices\n')).toThrow(/amd-smi metric printed no JSON: "ERROR:root:Unable to detect any GPU devices"/);
    expect(() => parseAmdSmiStatic('{"gpu_data": [ {"gpu": 0,')).toThrow(/amd-smi static printed JSON that does not parse/);
  });
});

describe('joinAmdSmi', () => {
  const cards = parseAmdSmiStatic(toolOutput('amd-smi-static-r9700x4.json'));

  it('joins memory by PCI address when metric gives one, else by amd-smi index; a card without memory is unmeasured', () => {
    const memory = [
      { gpu: 7, busAddress: '0000:83:00.0', totalBytes: 32624 * MiB, usedBytes: 100 * MiB },
      { gpu: 0, busAddress: null, totalBytes: 32624 * MiB, usedBytes: 28123 * MiB },
      { gpu: 1, busAddress: null, totalBytes: 32624 * MiB, usedBytes: 0 },
    ];
    expect(joinAmdSmi(cards, memory).map((c) => [c.busAddress, c.usedBytes])).toEqual([
      ['0000:03:00.0', 28123 * MiB],
      ['0000:23:00.0', 0],
      ['0000:83:00.0', 100 * MiB],
      ['0000:c3:00.0', null],
    ]);
  });
});
