// The soak's count of evictions that stopped a claimed server comes from the servers' own log
// lines as the admin event stream brings them: what a line says, and what a batch that skips,
// repeats or restarts (a new daemon) does to the count.
import { describe, expect, it } from 'vitest';
import { EvictionLog, parseEvictionLine } from '../../soak/server-log.js';

const evicting = (modelId: string, pid: number, inFlight: number, phase = 'ready'): string =>
  `── llmtray: evicting '${modelId}' (pid ${pid}, ${phase}) with ${inFlight} request(s) in flight`;

describe('parseEvictionLine', () => {
  it('reads the model, pid, phase and the requests in flight at the moment of stopping', () => {
    expect(parseEvictionLine("── llmtray: evicting 'chat-a' (pid 4242, ready) with 0 request(s) in flight")).toEqual({ modelId: 'chat-a', pid: 4242, phase: 'ready', inFlight: 0 });
    expect(parseEvictionLine("── llmtray: evicting 'slow' (pid 17, loading) with 2 request(s) in flight")).toEqual({ modelId: 'slow', pid: 17, phase: 'loading', inFlight: 2 });
  });

  it.each([
    "── llmtray: 'chat-a' (pid 4242) ended: SIGTERM",
    "── llmtray: 'chat-a' (pid 4242) is hung: it made no progress for 4 s with 1 request in flight; killing it",
    "── llmtray: starting 'chat-a' at level full: node engine.js",
    // An engine's own line that happens to say the words is not ours.
    "srv  log: evicting 'chat-a' (pid 1, ready) with 3 request(s) in flight",
  ])('ignores %s', (line) => {
    expect(parseEvictionLine(line)).toBeNull();
  });
});

describe('EvictionLog', () => {
  it('counts each eviction once, per daemon life, and the lines a gap skipped', () => {
    const log = new EvictionLog();
    log.append(0, { modelId: 'chat-a', first: 10, lines: ['loading', evicting('chat-a', 101, 0)] });
    // Overlap: the line at 11 again is not a second eviction.
    log.append(0, { modelId: 'chat-a', first: 11, lines: [evicting('chat-a', 101, 0), 'ended'] });
    // A gap of 3 lines (the feed's rate limit): those lines are not seen.
    log.append(0, { modelId: 'chat-a', first: 16, lines: [evicting('chat-a', 102, 1)] });
    // Another model keeps its own positions.
    log.append(0, { modelId: 'chat-b', first: 0, lines: [evicting('chat-b', 201, 0)] });
    // A new daemon numbers its lines from 0 again: no overlap with the old one's.
    log.append(1, { modelId: 'chat-a', first: 0, lines: [evicting('chat-a', 301, 0)] });

    expect(log.evictions).toEqual([
      { life: 0, modelId: 'chat-a', pid: 101, phase: 'ready', inFlight: 0 },
      { life: 0, modelId: 'chat-a', pid: 102, phase: 'ready', inFlight: 1 },
      { life: 0, modelId: 'chat-b', pid: 201, phase: 'ready', inFlight: 0 },
      { life: 1, modelId: 'chat-a', pid: 301, phase: 'ready', inFlight: 0 },
    ]);
    expect(log.linesNotSeen).toBe(3);
  });
});
