import { describe, expect, it } from 'vitest';
import { parseRocmSmi } from '../../../core/gpu/rocm-smi.js';
import { toolOutput } from '../../support/gpu-tool-output.js';


describe('parseRocmSmi', () => {
  it('reads a consumer card on ROCm 6.1.2: bytes as strings, pci.ids series as the name', () => {
    expect(parseRocmSmi(toolOutput('rocm-smi-rx6700xt-rocm612.json'))).toEqual([
      { busAddress: '0000:07:00.0', name: 'Navi 22 [Radeon RX 6700/6700 XT / 6800M]', totalBytes: 12868124672, usedBytes: 1572745216 },
    ]);
  });

  it('reads four MI100s on ROCm 6.0.2, whose name key is "Card series" and whose bus ids are upper case, in card order', () => {
    const cards = parseRocmSmi(toolOutput('rocm-smi-mi100x4-rocm602.json'));
    expect(cards.map((c) => c.busAddress)).toEqual(['0000:83:00.0', '0000:a3:00.0', '0000:c3:00.0', '0000:e3:00.0']);
    expect(new Set(cards.map((c) => c.name))).toEqual(new Set(['Arcturus GL-XL [Instinct MI100]']));
    expect(cards.every((c) => c.totalBytes === 34342961152 && c.usedBytes === 6750208)).toBe(true);
  });

  it('orders card10 after card2', () => {
    const stdout = '{"card10": {"PCI Bus": "0000:0c:00.0"}, "card2": {"PCI Bus": "0000:0b:00.0"}, "system": {"Driver version": "6.3.6"}}';
    expect(parseRocmSmi(stdout).map((c) => [c.busAddress, c.name])).toEqual([['0000:0b:00.0', 'AMD GPU 2'], ['0000:0c:00.0', 'AMD GPU 10']]);
  });

  it('leaves a card without a memory figure unmeasured', () => {
    const [card] = parseRocmSmi('{"card0": {"PCI Bus": "0000:03:00.0", "VRAM Total Memory (B)": "25753026560", "VRAM Total Used Memory (B)": "N/A"}}');
    expect(card).toMatchObject({ totalBytes: 25753026560, usedBytes: null });
  });

  it('throws on "No JSON data to report", quoting it', () => {
    expect(() => parseRocmSmi(toolOutput('rocm-smi-no-card.txt'))).toThrow(/rocm-smi printed no JSON: .*WARNING: No JSON data to report/);
  });
});
