import { describe, expect, it } from 'vitest';
import { Notice, type AbortNotice } from '../../../core/common/notice.js';

describe('Notice', () => {
  it('runs each listener once, in order, with the first reason kept', () => {
    const notice = new Notice();
    const heard: string[] = [];
    notice.addEventListener('abort', () => heard.push(`a:${String(notice.reason)}`));
    notice.addEventListener('abort', () => heard.push('b'));
    expect(notice.aborted).toBe(false);
    notice.abort('client_gone');
    notice.abort('later');
    expect(heard).toEqual(['a:client_gone', 'b']);
    expect(notice.aborted).toBe(true);
    expect(notice.reason).toBe('client_gone');
  });

  it('does not run a removed listener, nor one added after the abort (as AbortSignal)', () => {
    const notice = new Notice();
    let removedRan = false;
    const removed = (): void => {
      removedRan = true;
    };
    notice.addEventListener('abort', removed);
    notice.removeEventListener('abort', removed);
    notice.abort();
    let lateRan = false;
    notice.addEventListener('abort', () => {
      lateRan = true;
    });
    expect(removedRan).toBe(false);
    expect(lateRan).toBe(false);
    expect(notice.reason).toBeInstanceOf(DOMException);
  });

  it('keeps calling listeners after one throws, and reports the throw on its own', async () => {
    const notice = new Notice();
    const reported = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
    let secondRan = false;
    notice.addEventListener('abort', () => {
      throw new Error('listener broke');
    });
    notice.addEventListener('abort', () => {
      secondRan = true;
    });
    notice.abort();
    expect(secondRan).toBe(true);
    expect(((await reported) as Error).message).toBe('listener broke');
  });

  it('gives a real AbortSignal on demand that follows it, made before or after the abort', () => {
    const before = new Notice();
    const early = before.signal;
    expect(early.aborted).toBe(false);
    before.abort('hang');
    expect(early.aborted).toBe(true);
    expect(early.reason).toBe('hang');
    const after = new Notice();
    after.abort('gone');
    expect(after.signal.aborted).toBe(true);
    expect(after.signal.reason).toBe('gone');
    expect(after.signal).toBe(after.signal);
  });

  it('shares its reading interface with AbortSignal, so holders accept either', () => {
    const controller = new AbortController();
    const asNotice: AbortNotice = controller.signal;
    let heard = false;
    asNotice.addEventListener('abort', () => {
      heard = true;
    });
    controller.abort('x');
    expect(heard).toBe(true);
    expect(asNotice.reason).toBe('x');
  });
});
