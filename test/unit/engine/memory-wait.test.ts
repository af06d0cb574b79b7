import { describe, expect, it } from 'vitest';
import { waitForMemoryBack } from '../../../core/engine/supervisor/memory/memory-wait.js';
import { FakeClock } from '../../support/fake-clock.js';

const GB = 1e9;

describe('waitForMemoryBack', () => {
  it('returns once 75 % of the footprint is free again', async () => {
    const clock = new FakeClock();
    const freeSeen = [10 * GB, 11 * GB, 12.9 * GB, 13.1 * GB];
    let probes = 0;
    const probe = async () => freeSeen[Math.min(probes++, freeSeen.length - 1)] ?? 0;
    let result: boolean | undefined;
    void waitForMemoryBack({ probe, clock, freeBefore: 10 * GB, footprintBytes: 4 * GB, fraction: 0.75, maxMs: 5000, pollMs: 100 }).then((r) => {
      result = r;
    });
    await clock.advance(250);
    expect(result).toBeUndefined();
    expect(probes).toBe(3);
    await clock.advance(100);
    expect(result).toBe(true);
    expect(probes).toBe(4);
  });

  it('gives up after maxMs when the memory never shows', async () => {
    const clock = new FakeClock();
    let result: boolean | undefined;
    void waitForMemoryBack({ probe: async () => 10 * GB, clock, freeBefore: 10 * GB, footprintBytes: 4 * GB, fraction: 0.75, maxMs: 5000, pollMs: 100 }).then(
      (r) => {
        result = r;
      },
    );
    await clock.advance(4900);
    expect(result).toBeUndefined();
    await clock.advance(200);
    expect(result).toBe(false);
  });

  it('a wall-clock step forward does not end the wait early', async () => {
    const clock = new FakeClock();
    let result: boolean | undefined;
    void waitForMemoryBack({ probe: async () => 10 * GB, clock, freeBefore: 10 * GB, footprintBytes: 4 * GB, fraction: 0.75, maxMs: 5000, pollMs: 100 }).then(
      (r) => {
        result = r;
      },
    );
    clock.jumpWall(3_600_000);
    await clock.advance(4900);
    expect(result).toBeUndefined();
    await clock.advance(200);
    expect(result).toBe(false);
  });

  it('treats a failing probe as "not yet" rather than failing the eviction', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const probe = async () => {
      if (calls++ === 0) throw new Error('nvml gone');
      return 20 * GB;
    };
    let result: boolean | undefined;
    void waitForMemoryBack({ probe, clock, freeBefore: 10 * GB, footprintBytes: 4 * GB, fraction: 0.75, maxMs: 5000, pollMs: 100 }).then((r) => {
      result = r;
    });
    await clock.advance(100);
    expect(result).toBe(true);
  });

  it('does not wait for a server that held nothing on the device', async () => {
    const clock = new FakeClock();
    const result = await waitForMemoryBack({ probe: async () => 1, clock, freeBefore: 1, footprintBytes: 0, fraction: 0.75, maxMs: 5000, pollMs: 100 });
    expect(result).toBe(true);
  });
});
