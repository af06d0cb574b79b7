import { describe, expect, it } from 'vitest';
import { Emitter } from '../../../core/common/emitter.js';

describe('Emitter', () => {
  it('calls every listener in order; a throw is reported with the source’s name and the others still hear', () => {
    const reports: string[] = [];
    const emitter = new Emitter<{ a: string; b: number }>('the test source', (source, error) => reports.push(`${source}: ${(error as Error).message}`));
    const heard: string[] = [];
    emitter.event(({ a, b }) => heard.push(`first ${a} ${b}`));
    emitter.event(() => {
      throw new Error('boom');
    });
    emitter.event(({ a, b }) => heard.push(`third ${a} ${b}`));
    emitter.fire({ a: 'x', b: 1 });
    expect(heard).toEqual(['first x 1', 'third x 1']);
    expect(reports).toEqual(['the test source: boom']);
  });

  it('unsubscribes idempotently, and a listener that unsubscribes another mid-emit does not skip it this time', () => {
    const emitter = new Emitter<void>('s');
    const heard: string[] = [];
    let offB: () => void = () => undefined;
    const offA = emitter.event(() => {
      heard.push('a');
      offB();
    });
    offB = emitter.event(() => heard.push('b'));
    emitter.fire();
    emitter.fire();
    expect(heard).toEqual(['a', 'b', 'a']);
    offA();
    offA();
    emitter.fire();
    expect(heard).toEqual(['a', 'b', 'a']);
    expect(emitter.size).toBe(0);
  });

  it('survives a reporter that throws', () => {
    const emitter = new Emitter<void>('s', () => {
      throw new Error('reporter');
    });
    const heard: string[] = [];
    emitter.event(() => {
      throw new Error('listener');
    });
    emitter.event(() => heard.push('after'));
    expect(() => emitter.fire()).not.toThrow();
    expect(heard).toEqual(['after']);
  });
});
