// When the daemon lets the supervisor keep a warm spare: only in memory the plan leaves free, only on the CPU.
import { describe, expect, it } from 'vitest';
import { spareFits, type SpareRoom } from '../../../core/daemon/spare-room.js';

const MiB = 1024 ** 2;
const room: SpareRoom = { enabled: true, mode: 'cpu', budgetBytes: 400 * MiB, heldBytes: 200 * MiB, spareBytes: 100 * MiB };

describe('spareFits', () => {
  it.each([
    ['room beside what runs', room, true],
    ['exactly its size left', { ...room, heldBytes: 300 * MiB }, true],
    ['less than its size left (the demo with demo-chat resident)', { ...room, heldBytes: 301 * MiB }, false],
    ['a budget that shrank under what runs', { ...room, budgetBytes: 150 * MiB }, false],
    ['turned off in the config', { ...room, enabled: false }, false],
    ['models on a GPU: a spare starts a CPU backend only', { ...room, mode: 'gpu' as const }, false],
    ['unified memory', { ...room, mode: 'unified' as const }, false],
    ['no budget sample yet', { ...room, mode: null }, false],
  ])('%s', (_, input, fits) => {
    expect(spareFits(input)).toBe(fits);
  });
});
