import { describe, expect, it } from 'vitest';
import { parseNvidiaMemory } from '../../../core/gpu/nvidia-memory.js';

const MiB = 1024 ** 2;

describe('parseNvidiaMemory', () => {
  it('reads each card by bus address, used as total − free (the driver’s reservation counts)', () => {
    const cards = parseNvidiaMemory('00000000:01:00.0, 24564, 600, 23618\n00000000:02:00.0, 12288, 0, 12026\n');
    expect([...cards]).toEqual([
      ['0000:01:00.0', { totalBytes: 24564 * MiB, usedBytes: 946 * MiB }],
      ['0000:02:00.0', { totalBytes: 12288 * MiB, usedBytes: 262 * MiB }],
    ]);
  });

  it('skips what is not a card: blank lines, [N/A] figures, a driver’s complaint', () => {
    const cards = parseNvidiaMemory('\nFailed to initialize NVML: Driver/library version mismatch\n00000000:03:00.0, [N/A], [N/A], [N/A]\n');
    expect(cards.size).toBe(0);
  });
});
