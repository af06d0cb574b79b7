import { describe, expect, it } from 'vitest';
import { COMPUTE_APPS_ARGS, parseComputeApps, queryComputeApps, sharedComputeAppsReader } from '../../../core/gpu/compute-apps.js';
import { FakeClock } from '../../support/fake-clock.js';

const MiB = 1024 ** 2;

describe('parseComputeApps', () => {
  it('reads bus id, pid and MiB per line', () => {
    const stdout = '00000000:01:00.0, 4242, 6144\n00000000:02:00.0, 4242, 512\n00000000:01:00.0, 1888, 1200\n';
    expect(parseComputeApps(stdout)).toEqual([
      { busAddress: '0000:01:00.0', pid: 4242, usedBytes: 6144 * MiB },
      { busAddress: '0000:02:00.0', pid: 4242, usedBytes: 512 * MiB },
      { busAddress: '0000:01:00.0', pid: 1888, usedBytes: 1200 * MiB },
    ]);
  });

  it('keeps a process whose memory the driver will not report, with null bytes', () => {
    expect(parseComputeApps('00000000:01:00.0, 77, [N/A]\r\n00000000:01:00.0, 78, [Insufficient Permissions]\r\n')).toEqual([
      { busAddress: '0000:01:00.0', pid: 77, usedBytes: null },
      { busAddress: '0000:01:00.0', pid: 78, usedBytes: null },
    ]);
  });

  it('reads no process from empty output or a message line', () => {
    expect(parseComputeApps('')).toEqual([]);
    expect(parseComputeApps('No running processes found\n')).toEqual([]);
    expect(parseComputeApps('garbage, x, 12\n')).toEqual([]);
  });
});

describe('queryComputeApps', () => {
  it('asks nvidia-smi for exactly the fields it parses', async () => {
    const seen: [string, readonly string[]][] = [];
    const apps = await queryComputeApps(async (file, args) => {
      seen.push([file, args]);
      return '00000000:01:00.0, 9, 100\n';
    });
    expect(seen).toEqual([['nvidia-smi', ['--query-compute-apps=gpu_bus_id,pid,used_memory', '--format=csv,noheader,nounits']]]);
    expect(COMPUTE_APPS_ARGS).toEqual(seen[0]?.[1]);
    expect(apps).toEqual([{ busAddress: '0000:01:00.0', pid: 9, usedBytes: 100 * MiB }]);
  });

  it('rejects when nvidia-smi fails', async () => {
    await expect(queryComputeApps(async () => { throw new Error('nvidia-smi failed: NVML not loaded'); })).rejects.toThrow(/NVML/);
  });
});

describe('sharedComputeAppsReader', () => {
  const app = { busAddress: '0000:01:00.0', pid: 42, usedBytes: 1024 };

  it('answers every caller within the freshness window from one query, and asks again after it', async () => {
    const clock = new FakeClock();
    let queries = 0;
    const read = sharedComputeAppsReader(async () => (queries++, [app]), clock, 1_000);
    expect(await Promise.all([read(), read()])).toEqual([[app], [app]]);
    await clock.advance(999);
    await read();
    expect(queries).toBe(1);
    await clock.advance(1);
    await read();
    expect(queries).toBe(2);
  });

  it('does not keep a failed query: the next caller asks again', async () => {
    const clock = new FakeClock();
    let queries = 0;
    const read = sharedComputeAppsReader(async () => {
      queries++;
      if (queries === 1) throw new Error('nvidia-smi failed');
      return [app];
    }, clock);
    await expect(read()).rejects.toThrow('nvidia-smi failed');
    expect(await read()).toEqual([app]);
    expect(queries).toBe(2);
  });
});
