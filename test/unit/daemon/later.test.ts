import { describe, expect, it } from 'vitest';
import { Later } from '../../../core/daemon/later.js';

describe('Later', () => {
  it('names the part asked before it exists, and answers once it is set', () => {
    const later = new Later<{ pids(): number[] }>('the supervisor');
    expect(later.peek()).toBeNull();
    expect(() => later.get()).toThrow('the supervisor is asked before it exists');
    const part = { pids: () => [7] };
    later.set(part);
    expect(later.get().pids()).toEqual([7]);
    expect(() => later.set(part)).toThrow('the supervisor is set twice');
  });
});
