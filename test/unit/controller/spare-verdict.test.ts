// When the controller lets the supervisor keep a warm spare: only in memory the plan leaves free.
// (Only on the CPU and only when the config allows one: the desired state's `warmSpare`.)
import { describe, expect, it } from 'vitest';
import { spareFits } from '../../../core/controller/spare-verdict.js';

const MiB = 1024 ** 2;
const room = { budgetBytes: 400 * MiB, heldBytes: 200 * MiB, spareBytes: 100 * MiB };

describe('spareFits', () => {
  it.each([
    ['room beside what runs', room, true],
    ['exactly its size left', { ...room, heldBytes: 300 * MiB }, true],
    ['less than its size left (the demo with demo-chat resident)', { ...room, heldBytes: 301 * MiB }, false],
    ['a budget that shrank under what runs', { ...room, budgetBytes: 150 * MiB }, false],
  ])('%s', (_, input, fits) => {
    expect(spareFits(input)).toBe(fits);
  });
});
