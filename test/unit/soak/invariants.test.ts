// The soak's verdict from a record: a clean record passes, and each way the product can fail
// breaks exactly the invariant that names it.
import { describe, expect, it } from 'vitest';
import type { FaultRecord } from '../../soak/explain.js';
import { checkInvariants, FD_SLACK, LIVE_HEAP_GROWTH_LIMIT_BYTES, plannedFaults, RSS_GROWTH_LIMIT_BYTES, type SoakRecord } from '../../soak/invariants.js';
import { FAULT_KINDS, IN_LIFE_FAULTS, parseSoakArgs, planEpisodes, PROFILES, SoakUsageError } from '../../soak/profiles.js';
import type { Outcome } from '../../soak/request-outcome.js';
import { renderSummary } from '../../soak/summary-table.js';

const T = 1_000_000;
const profile = PROFILES.short;

function cleanRecord(): SoakRecord {
  const faults: FaultRecord[] = FAULT_KINDS.map((kind, i) => ({
    id: i + 1,
    kind,
    modelId: kind === 'daemon-kill' ? null : 'chat-b',
    at: T + i * 100_000,
    until: T + i * 100_000 + 10_000,
    classifiedAs: kind === 'daemon-kill' ? 'orphans ended (1)' : ['slow-load', 'client-abort'].includes(kind) ? 'none' : kind,
    expected: kind === 'daemon-kill' ? 'orphans ended' : ['slow-load', 'client-abort'].includes(kind) ? 'none' : kind,
    seen: true,
    note: '',
    ...(kind === 'daemon-kill' ? { restart: { orphans: 1, ended: 1, left: 0, pinKept: true } } : {}),
  }));
  const crash = faults[0] as FaultRecord;
  const outcomes: Outcome[] = [
    { id: 1, origin: 'client 1', faultId: null, model: 'chat-a', stream: false, startedAt: T - 5_000, firstByteAt: T - 4_000, endedAt: T - 4_000, ok: true, error: null, chunks: 0 },
    {
      id: 2, origin: 'crash #1', faultId: crash.id, model: 'chat-b', stream: true, startedAt: T - 1_000, firstByteAt: T - 500, endedAt: T + 10,
      ok: false, error: { class: 'stream-event', status: null, type: 'engine_error', code: 'engine_stream_interrupted', message: 'gone' }, chunks: 1,
    },
  ];
  return {
    profile,
    outcomes,
    faults,
    swaps: profile.targetSwaps,
    pinnedEvictions: 0,
    pinnedPidsByLife: [[101], [202]],
    evictionsLogged: 60,
    claimedEvictions: [],
    serverLogLinesNotSeen: 0,
    baseline: { at: T, fds: 24, rssBytes: 90e6, liveHeapBytes: 16e6, externalBytes: 3e6 },
    end: { at: T + 600_000, fds: 24, rssBytes: 92e6, liveHeapBytes: 16.2e6, externalBytes: 3e6 },
    inFlightAtEnd: 0,
    enginesSeen: 30,
    enginesLeft: [],
    portsSeen: 30,
    portsLeft: [],
    daemonExit: { code: 0, signal: null },
    aborted: null,
  };
}

const broken = (record: SoakRecord): string[] => checkInvariants(record).filter((r) => !r.ok).map((r) => r.name);

describe('checkInvariants', () => {
  it('passes a record where every failure is explained and nothing is left behind', () => {
    expect(broken(cleanRecord())).toEqual([]);
    expect(renderSummary(cleanRecord(), { machine: 'test', startedAt: T, endedAt: T + 60_000, launches: 40 }).pass).toBe(true);
  });

  it('counts a failure no fault explains as a lost request; mid-answer, also as an answer cut off', () => {
    const record = cleanRecord();
    record.outcomes = [
      ...record.outcomes,
      { id: 3, origin: 'client 2', faultId: null, model: 'chat-a', stream: true, startedAt: T + 500_000, firstByteAt: T + 500_100, endedAt: T + 500_200, ok: false, error: { class: 'broken', status: null, type: null, code: null, message: 'cut' }, chunks: 2 },
    ];
    expect(broken(record)).toEqual(['requests lost (a failure no injected fault explains)', 'answers cut off that no fault explains']);
    const { text, pass } = renderSummary(record, { machine: 'test', startedAt: T, endedAt: T + 60_000, launches: 40 });
    expect(pass).toBe(false);
    expect(text).toContain('#3 client 2 chat-a (stream): cut');
  });

  it('breaks on an explained failure that is not in OpenAI\'s shape', () => {
    const record = cleanRecord();
    const [ok, crashed] = record.outcomes as [Outcome, Outcome];
    record.outcomes = [ok, { ...crashed, error: { class: 'stream-event', status: null, type: 'engine_error', code: 'engine_stream_interrupted', message: '' } }];
    expect(broken(record)).toEqual(["failures not in OpenAI's error shape"]);
  });

  it('breaks on a pinned model evicted, or served by a new engine within one daemon life', () => {
    expect(broken({ ...cleanRecord(), pinnedEvictions: 1 })).toEqual(['evictions or restarts of the pinned model']);
    expect(broken({ ...cleanRecord(), pinnedPidsByLife: [[101, 102]] })).toEqual(['evictions or restarts of the pinned model']);
  });

  it('breaks on an eviction that stopped a server with a request in flight, and when no eviction was seen at all (no evidence)', () => {
    const claimed = { ...cleanRecord(), claimedEvictions: ['chat-a (pid 4242, life 0): 1 in flight'] };
    expect(broken(claimed)).toEqual(['evictions of a server with a request in flight (claimed)']);
    expect(checkInvariants(claimed).find((r) => r.name.startsWith('evictions of a server'))?.measured).toBe(
      "1 of 60 evictions in the servers' logs: chat-a (pid 4242, life 0): 1 in flight",
    );
    expect(broken({ ...cleanRecord(), evictionsLogged: 0 })).toEqual(['evictions of a server with a request in flight (claimed)']);
    // Lines the stream skipped are said, not judged: the evictions seen still count.
    const gaps = checkInvariants({ ...cleanRecord(), serverLogLinesNotSeen: 12 }).find((r) => r.name.startsWith('evictions of a server'));
    expect(gaps).toEqual({ name: 'evictions of a server with a request in flight (claimed)', measured: "0 of 60 evictions in the servers' logs (12 server log lines not seen)", ok: true });
  });

  it('breaks on a fault not seen, not classified as expected, or injected fewer times than planned', () => {
    const record = cleanRecord();
    record.faults = record.faults.map((f) => (f.kind === 'oom' ? { ...f, classifiedAs: 'crash' } : f));
    expect(broken(record)).toEqual(['faults injected as planned, seen and classified with their kind']);
    expect(broken({ ...cleanRecord(), faults: cleanRecord().faults.filter((f) => f.kind !== 'hang') })).toEqual([
      'faults injected as planned, seen and classified with their kind',
    ]);
  });

  it('breaks on an orphan left or a pin lost after the daemon\'s kill', () => {
    const record = cleanRecord();
    record.faults = record.faults.map((f) => (f.restart ? { ...f, restart: { ...f.restart, left: 1 } } : f));
    expect(broken(record)).toContain("after each kill -9: orphans left, pin kept");
  });

  it('breaks on leaks: requests still in flight, engines or ports left, descriptors or memory grown', () => {
    const base = cleanRecord();
    expect(broken({ ...base, inFlightAtEnd: 1 })).toEqual(['requests still counted in flight at rest at the end']);
    expect(broken({ ...base, enginesLeft: [4242] })).toEqual(['engine processes left after the final stop']);
    expect(broken({ ...base, portsLeft: [40000] })).toEqual(['engine ports still listening after the final stop']);
    const at = (end: Partial<NonNullable<SoakRecord['end']>>): SoakRecord => ({ ...base, end: { ...(base.baseline as NonNullable<SoakRecord['end']>), at: T + 1, ...end } });
    expect(broken(at({ fds: 24 + FD_SLACK }))).toEqual([]);
    expect(broken(at({ fds: 24 + FD_SLACK + 1 }))).toHaveLength(1);
    // The leak bound is on the live heap after a GC: RSS grown past the old 10 MB bound with the
    // live heap flat (an allocator's high-water mark) passes, the live heap grown fails.
    expect(broken(at({ rssBytes: 90e6 + 12.2e6 }))).toEqual([]);
    expect(broken(at({ liveHeapBytes: 16e6 + LIVE_HEAP_GROWTH_LIMIT_BYTES - 1 }))).toEqual([]);
    expect(broken(at({ liveHeapBytes: 16e6 + LIVE_HEAP_GROWTH_LIMIT_BYTES }))).toEqual([expect.stringContaining('daemon live heap after a full GC')]);
    // RSS stays a backstop for what the heap does not see.
    expect(broken(at({ rssBytes: 90e6 + RSS_GROWTH_LIMIT_BYTES }))).toEqual([expect.stringContaining('daemon RSS at rest')]);
    expect(broken({ ...base, baseline: null })).toHaveLength(3);
  });

  it('breaks when the swap target was missed, the last stop was not clean, or the run stopped early', () => {
    expect(broken({ ...cleanRecord(), swaps: profile.targetSwaps - 1 })).toEqual(['request-driven swaps']);
    expect(broken({ ...cleanRecord(), daemonExit: { code: null, signal: 'SIGKILL' } })).toEqual(['the last daemon stops on SIGTERM with exit 0']);
    expect(broken({ ...cleanRecord(), aborted: 'the run stopped: boom' })).toEqual(['the run completed']);
  });
});

describe('the profiles', () => {
  it('inject every fault once in the short profile and several times in the full one, the daemon\'s kills first', () => {
    for (const kind of FAULT_KINDS) expect(plannedFaults(PROFILES.short)[kind]).toBe(1);
    const full = plannedFaults(PROFILES.full);
    for (const kind of FAULT_KINDS) expect(full[kind]).toBeGreaterThanOrEqual(3);
    const { restarts, warmUp, lastLife } = planEpisodes(PROFILES.full);
    expect(restarts.filter((k) => k === 'daemon-kill')).toHaveLength(PROFILES.full.daemonKills);
    expect(lastLife).not.toContain('daemon-kill');
    expect(warmUp).not.toContain('daemon-kill');
  });

  it("warm the last daemon with one round of every other fault before it is measured", () => {
    // A path's first run allocates for good (compiled code, a model's log ring): no leak, so not counted.
    for (const profile of [PROFILES.short, PROFILES.full]) {
      expect([...planEpisodes(profile).warmUp].sort()).toEqual([...IN_LIFE_FAULTS].sort());
    }
    expect(planEpisodes(PROFILES.short).lastLife).toEqual([]);
  });

  it('read the command line, and say which flag is wrong', () => {
    expect(parseSoakArgs(['--short', '--clients', '3']).profile).toMatchObject({ name: 'short', clients: 3, targetSwaps: PROFILES.short.targetSwaps });
    expect(parseSoakArgs([]).profile.name).toBe('full');
    expect(() => parseSoakArgs(['--clients', '5'])).toThrow(new SoakUsageError("--clients: expected a whole number from 2 to 4, got '5'"));
    expect(() => parseSoakArgs(['--swaps'])).toThrow(/--swaps: expected a whole number from 1 to 100000, got nothing/);
    expect(() => parseSoakArgs(['--fast'])).toThrow(/unknown argument '--fast'/);
  });
});
