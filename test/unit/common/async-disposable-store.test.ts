import { describe, expect, it } from 'vitest';
import { AsyncDisposableStore } from '../../../core/common/async-disposable-store.js';

describe('AsyncDisposableStore', () => {
  it('runs teardowns last first, each awaited before the next, so the lock outlives the engines', async () => {
    const order: string[] = [];
    const store = new AsyncDisposableStore(() => undefined);
    store.add(() => void order.push('lock'));
    store.add(async () => {
      await new Promise((resolve) => setImmediate(resolve));
      order.push('engines');
    });
    store.add(() => void order.push('port'));
    await store.dispose();
    expect(order).toEqual(['port', 'engines', 'lock']);
  });

  it('reports a throwing teardown and still runs the others', async () => {
    const order: string[] = [];
    const reported: unknown[] = [];
    const store = new AsyncDisposableStore((error) => reported.push(error));
    store.add(() => void order.push('first'));
    store.add(async () => {
      throw new Error('stuck');
    });
    await store.dispose();
    expect(order).toEqual(['first']);
    expect(reported).toEqual([new Error('stuck')]);
  });

  it('runs each teardown once however often it is disposed, and one added after disposing at once', async () => {
    let runs = 0;
    const store = new AsyncDisposableStore(() => undefined);
    store.add(() => void runs++);
    await Promise.all([store.dispose(), store.dispose()]);
    await store.dispose();
    expect(runs).toBe(1);
    store.add(() => void runs++);
    await store.dispose();
    expect(runs).toBe(2);
  });
});
