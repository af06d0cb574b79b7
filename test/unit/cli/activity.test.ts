import { describe, expect, it } from 'vitest';
import { activityLine, activityText, followActivity } from '../../../core/cli/activity.js';
import type { CliAdmin } from '../../../core/cli/admin-client.js';
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import type { RequestRecord } from '../../../core/contracts/requests/request-record.js';
import { fixtureSnapshot } from '../../support/fixture-snapshot.js';
import { bodiesWords, durationWords, modelWords, tokenWords, waitWords } from '../../../core/contracts/requests/request-words.js';
import { requestRecord } from '../../support/request-records.js';

describe('activityText', () => {
  const newest = requestRecord({ id: 'r3', model: 'big', servedBy: 'small', waited: 'load', waitMs: 2100, firstTokenMs: 2400, promptTokens: 31, cachedTokens: 24, completionTokens: 12, tokensPerSecond: 45.25, durationMs: 2700 });
  const limited = requestRecord({ id: 'r2', model: 'small', servedBy: null, status: 429, firstTokenMs: null, promptTokens: null, cachedTokens: null, completionTokens: null, tokensPerSecond: null, error: "Model 'small' has 1 request waiting, its queueLimit" });
  const oldest = requestRecord({ id: 'r1', model: 'small', servedBy: 'small', firstTokenMs: 90, tokensPerSecond: 50 });
  const answer = { requests: [newest, limited, oldest], keep: 1000, keepBodiesBytes: 0 };

  it('lists the requests oldest first (the newest on the last line), with what each waited for, cost and how it ended', () => {
    const lines = activityText(answer, 20).split('\n');
    expect(lines[0]).toMatch(/^TIME\s+ID\s+STATUS\s+MODEL/);
    expect(lines.slice(1, 4).map((line) => line.split(/\s+/)[1])).toEqual(['r1', 'r2', 'r3']);
    expect(lines[3]).toContain('big → small');
    expect(lines[3]).toContain('load 2.1 s');
    expect(lines[3]).toContain('31 → 12 (24 cached)');
    expect(lines[3]).toContain('45.3 tok/s');
    expect(lines[2]).toContain('429');
    expect(lines[2]).toContain('its queueLimit');
  });

  it('summarizes per answering model, and says how many more it holds than it shows', () => {
    const text = activityText(answer, 2);
    expect(text).toMatch(/MODEL\s+REQUESTS\s+FAILED\s+FIRST TOKEN P50\s+P95\s+SPEED P50/);
    expect(text).toMatch(/\nsmall\s+3\s+1\s+90 ms\s+2\.4 s\s+45\.3 tok\/s/);
    expect(text).toContain('(the last 2 of 3 requests held; -n N for more)');
    expect(text.split('\n').filter((line) => /^\d\d:\d\d:\d\d\s+r\d/.test(line))).toHaveLength(2);
  });

  it('says there is nothing yet rather than printing an empty table', () => {
    expect(activityText({ requests: [], keep: 50, keepBodiesBytes: 0 }, 20)).toBe('no requests yet (the daemon keeps the last 50)');
  });

  it('puts a followed request on one line', () => {
    const line = activityLine(newest);
    expect(line).not.toContain('\n');
    expect(line).toContain('r3  200  big → small  /v1/chat/completions  local  load 2.1 s  2.4 s');
  });
});

describe('the words for a request', () => {
  it('says durations, waits, tokens, models and the body setting as a person reads them', () => {
    expect([durationWords(850.4), durationWords(2149), durationWords(65_000), durationWords(null)]).toEqual(['850 ms', '2.1 s', '1 min 05 s', '—']);
    expect([waitWords({ waited: null, waitMs: 0 }), waitWords({ waited: 'room', waitMs: 300 })]).toEqual(['—', 'room 300 ms']);
    expect(tokenWords({ promptTokens: 5, cachedTokens: 0, completionTokens: 2 })).toBe('5 → 2');
    expect(tokenWords({ promptTokens: null, cachedTokens: null, completionTokens: null })).toBe('—');
    expect([modelWords({ model: 'a', servedBy: 'a' }), modelWords({ model: 'a', servedBy: null }), modelWords({ model: null, servedBy: null })]).toEqual(['a', 'a', '(none)']);
    expect(bodiesWords(0)).toContain('not kept');
    expect(bodiesWords(65_536)).toContain('64 KiB');
  });
});

describe('followActivity', () => {
  /**
   * A daemon as the CLI's admin client sees it: its stream delivers `before` (events that come
   * before the listing is answered), the listing answers `listed`, then the stream delivers `after`
   * and ends (or is stopped).
   */
  function fakeAdmin(listed: RequestRecord[], before: RequestRecord[], after: RequestRecord[]) {
    let answerListing: () => void = () => {};
    const listingAnswered = new Promise<void>((resolve) => (answerListing = resolve));
    const admin = {
      getActivity: async () => {
        await Promise.resolve();
        answerListing();
        return { requests: listed, keep: 1000, keepBodiesBytes: 0 };
      },
      async events(onEvent: (event: AdminEvent) => boolean) {
        onEvent({ type: 'SnapshotUpdated', snapshot: fixtureSnapshot() as never });
        for (const record of before) onEvent({ type: 'RequestRecorded', record });
        await listingAnswered;
        await Promise.resolve();
        for (const record of after) onEvent({ type: 'RequestRecorded', record });
      },
    } as unknown as CliAdmin;
    return admin;
  }

  it('prints the table, then each request that ends, none twice though it crossed the listing, and only those the filter asks for', async () => {
    const one = requestRecord({ id: 'f1' });
    const two = requestRecord({ id: 'f2' });
    const three = requestRecord({ id: 'f3', model: 'other', servedBy: 'other' });
    const four = requestRecord({ id: 'f4' });
    // f2 ended while the listing was read: the listing holds it and so does the stream.
    const out: string[] = [];
    const end = await followActivity(fakeAdmin([two, one], [two], [three, four]), { model: 'demo-chat' }, 20, (text) => out.push(text), new AbortController().signal);
    expect(end).toBe('daemon-gone');
    expect(out[0]).toContain('SPEED P50');
    expect(out.slice(1).map((line) => line.split('  ')[1])).toEqual(['f4']);
  });

  it('prints what ended before the listing came but is not in it', async () => {
    const late = requestRecord({ id: 'g2' });
    const out: string[] = [];
    await followActivity(fakeAdmin([requestRecord({ id: 'g1' })], [late], []), {}, 20, (text) => out.push(text), new AbortController().signal);
    expect(out.slice(1).map((line) => line.split('  ')[1])).toEqual(['g2']);
  });
});
