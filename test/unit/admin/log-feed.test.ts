// The log feed on a fake clock: when batches go out, what a model over its rate sends, and that
// a reader placing them by position (core/contracts/log-lines.ts) sees the newest lines and an
// honest count of the rest.
import { describe, expect, it } from 'vitest';
import { LogFeed, type LogFeedOptions } from '../../../core/admin/log-feed.js';
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import { linesAfter } from '../../../core/contracts/log-lines.js';
import { FakeClock } from '../../support/fake-clock.js';

type LogAppended = Extract<AdminEvent, { type: 'LogAppended' }>;

function setup(options: Partial<LogFeedOptions> = {}) {
  const clock = new FakeClock();
  const sent: LogAppended[] = [];
  const feed = new LogFeed({ clock, publish: (event) => sent.push(event), ...options });
  const positions = new Map<string, number>();
  /** Lines as the supervisor hands them over: numbered per model from 0. */
  const write = (modelId: string, ...lines: string[]) => {
    for (const line of lines) {
      const position = positions.get(modelId) ?? 0;
      feed.append(modelId, line, position);
      positions.set(modelId, position + 1);
    }
  };
  /** What a reader of `modelId`'s batches shows, markers included. */
  const shown = (modelId: string) => {
    let next: number | null = 0;
    const out: string[] = [];
    for (const batch of sent.filter((e) => e.modelId === modelId)) {
      const placed = linesAfter(next, batch.first, batch.lines);
      out.push(...placed.append);
      next = placed.next;
    }
    return out;
  };
  return { clock, sent, feed, write, shown };
}

const numbered = (from: number, count: number) => Array.from({ length: count }, (_, i) => `line ${from + i}`);

describe('LogFeed', () => {
  it('holds lines for one interval and sends them as one batch per model, in order', async () => {
    const t = setup();
    t.write('demo-chat', 'llama_model_loader: loaded meta data');
    await t.clock.advance(200);
    t.write('demo-chat', 'load_tensors: CPU model buffer size = 60 MiB');
    t.write('demo-tiny', 'main: server is listening');
    expect(t.sent).toEqual([]);
    await t.clock.advance(50);
    expect(t.sent).toEqual([
      { type: 'LogAppended', modelId: 'demo-chat', first: 0, lines: ['llama_model_loader: loaded meta data', 'load_tensors: CPU model buffer size = 60 MiB'] },
      { type: 'LogAppended', modelId: 'demo-tiny', first: 0, lines: ['main: server is listening'] },
    ]);
    // Quiet: no timer left behind.
    expect(t.clock.pendingDelays()).toEqual([]);
    t.write('demo-chat', 'srv  llama_server: model loaded');
    await t.clock.advance(250);
    expect(t.sent.at(-1)).toEqual({ type: 'LogAppended', modelId: 'demo-chat', first: 2, lines: ['srv  llama_server: model loaded'] });
  });

  it('lets a whole burst through at once', async () => {
    const t = setup({ burstLines: 500, linesPerSecond: 100 });
    t.write('demo-chat', ...numbered(0, 500));
    await t.clock.advance(250);
    expect(t.sent).toHaveLength(1);
    expect(t.sent[0]).toMatchObject({ first: 0 });
    expect(t.sent[0]!.lines).toHaveLength(500);
  });

  it('holds a spewing model to its rate: the newest lines go out, the rest are counted, and other models are untouched', async () => {
    const t = setup({ burstLines: 500, linesPerSecond: 100 });
    // 10 000 lines a second for 3 seconds, while demo-tiny logs one line a second.
    let written = 0;
    for (let tick = 0; tick < 12; tick++) {
      t.write('demo-chat', ...numbered(written, 2_500));
      written += 2_500;
      if (tick % 4 === 0) t.write('demo-tiny', `slot ${tick}`);
      await t.clock.advance(250);
    }
    await t.clock.advance(250);
    const chat = t.sent.filter((e) => e.modelId === 'demo-chat');
    const sentLines = chat.reduce((sum, e) => sum + e.lines.length, 0);
    // The burst at the first batch, then 100 a second: 25 for each of the 11 batches after it.
    expect(sentLines).toBe(500 + 11 * 25);
    // Every batch ends with the newest line written by then, so the reader is never behind.
    for (const batch of chat) expect(batch.lines.at(-1)).toMatch(/^line \d+$/);
    expect(chat.at(-1)!.lines.at(-1)).toBe(`line ${written - 1}`);
    const shown = t.shown('demo-chat');
    const dropped = shown.filter((l) => l.startsWith('…')).reduce((sum, l) => sum + Number(/… (\d+) lines dropped/.exec(l)![1]), 0);
    expect(dropped + sentLines).toBe(written);
    expect(t.shown('demo-tiny')).toEqual(['slot 0', 'slot 4', 'slot 8']);
  });

  it('never keeps back the last lines of a model that spent its tokens: they go out once it earns one', async () => {
    // Half a token per interval.
    const t = setup({ burstLines: 10, linesPerSecond: 2 });
    t.write('demo-chat', ...numbered(0, 10));
    await t.clock.advance(250);
    t.write('demo-chat', ...numbered(10, 30));
    await t.clock.advance(250);
    expect(t.shown('demo-chat').at(-1)).toBe('line 9');
    await t.clock.advance(250); // one token earned: the newest line, with the 29 before it counted
    expect(t.shown('demo-chat').slice(-2)).toEqual(['… 29 lines dropped', 'line 39']);
    t.write('demo-chat', 'the last line');
    await t.clock.advance(250); // no whole token yet: it waits
    expect(t.shown('demo-chat').at(-1)).toBe('line 39');
    await t.clock.advance(250);
    expect(t.shown('demo-chat').at(-1)).toBe('the last line');
    expect(t.clock.pendingDelays()).toEqual([]);
  });

  it('keeps no more pending lines than it could ever send', async () => {
    const t = setup({ burstLines: 100, linesPerSecond: 100 });
    t.write('demo-chat', ...numbered(0, 100_000));
    await t.clock.advance(250);
    expect(t.sent).toEqual([{ type: 'LogAppended', modelId: 'demo-chat', first: 99_900, lines: numbered(99_900, 100) }]);
  });

  it('sends nothing once closed', async () => {
    const t = setup();
    t.write('demo-chat', 'a');
    t.feed.close();
    t.write('demo-chat', 'b');
    await t.clock.advance(1_000);
    expect(t.sent).toEqual([]);
    expect(t.clock.pendingDelays()).toEqual([]);
  });
});
