// The short soak (`npm run soak -- --short`) as part of the suite: the real daemon under an
// address-space limit, real engines, two openai clients driving swaps, and each fault injected
// once — an engine SIGKILLed mid-stream and one SIGSTOPped, an out-of-memory launch, a corrupt
// model, a slow load, a client that hangs up, and a kill -9 of the daemon with a restart. It
// asserts the soak's verdict, and that the faults really struck and were seen, so a soak that
// silently injected nothing cannot pass. The full soak and its results: RELIABILITY.md.
import { describe, expect, it } from 'vitest';
import { describeError } from '../soak/explain.js';
import { attribute } from '../soak/invariants.js';
import { FAULT_KINDS, PROFILES } from '../soak/profiles.js';
import { runSoak } from '../soak/run-soak.js';

describe('the short soak', () => {
  it('holds every invariant, with each fault injected, seen and classified as its kind', async () => {
    const { record, summary, pass } = await runSoak({ profile: PROFILES.short, outDir: null, keep: false });
    // The table says what broke; a bare `false` would not.
    expect(pass, summary).toBe(true);
    for (const kind of FAULT_KINDS) {
      const faults = record.faults.filter((f) => f.kind === kind);
      expect(faults.length, `${kind} was injected\n${summary}`).toBeGreaterThanOrEqual(1);
      for (const fault of faults) expect(fault.seen, `${kind}: ${fault.note}`).toBe(true);
    }
    expect(record.swaps).toBeGreaterThanOrEqual(PROFILES.short.targetSwaps);
    // The clients felt the faults that must reach them, each in its own words.
    const felt = new Set(attribute(record.outcomes, record.faults).flatMap((a) => (a.fault === null || a.outcome.error === null ? [] : [`${a.fault.kind}: ${describeError(a.outcome.error).replace(/ \(.*\)$/, '')}`])));
    expect([...felt], summary).toEqual(
      expect.arrayContaining(['crash: stream error engine_stream_interrupted', 'invalid: 503 model_quarantined', 'daemon-kill: connection', 'client-abort: aborted: the client aborted the stream']),
    );
    expect([...felt].some((f) => f.startsWith('hang: ') && f.includes('engine_hung')), summary).toBe(true);
  }, 25 * 60_000);
});
