import { describe, expect, it } from 'vitest';
import { createOwnUsageProvider, parseRssAnonBytes } from '../../../core/gpu/own-usage.js';
import type { GpuDevice } from '../../../core/gpu/compute-budget.js';
import type { ExecFileText } from '../../../core/gpu/exec-file.js';

const MiB = 1024 ** 2;

function gpu(index: number, busAddress: string): GpuDevice {
  return { index, name: `GPU ${index}`, vendor: 'NVIDIA Corporation', busAddress, totalBytes: 24 * 1024 * MiB, usedBytes: 0, unifiedMemory: false };
}
const intel: GpuDevice = { index: 0, name: 'UHD', vendor: 'Intel Corporation', busAddress: '0000:00:02.0', totalBytes: null, usedBytes: null, unifiedMemory: false };

function scripted(answers: Record<string, string | Error>): { exec: ExecFileText; calls: string[] } {
  const calls: string[] = [];
  const exec: ExecFileText = async (file, args) => {
    const command = [file, ...args].join(' ');
    calls.push(command);
    const answer = answers[file];
    if (answer === undefined || answer instanceof Error) throw answer ?? new Error(`${command}: not found`);
    return answer;
  };
  return { exec, calls };
}

const noProc = async (): Promise<string> => { throw new Error('ENOENT'); };

describe('createOwnUsageProvider', () => {
  it('sums only our pids, per GPU by bus id', async () => {
    const { exec } = scripted({
      'nvidia-smi': '00000000:01:00.0, 4242, 6144\n00000000:02:00.0, 4242, 512\n00000000:01:00.0, 1888, 1200\n00000000:02:00.0, 5151, 300\n',
    });
    const provider = createOwnUsageProvider({ pids: () => [4242, 5151], exec, readFile: noProc, platform: 'linux' });
    const usage = await provider([gpu(0, '0000:00:02.0'), gpu(1, '0000:01:00.0'), gpu(2, '0000:02:00.0')]);
    expect([...usage.byGpu.entries()].sort()).toEqual([[1, 6144 * MiB], [2, 812 * MiB]]);
  });

  it('spawns nothing while we run no engine', async () => {
    const { exec, calls } = scripted({});
    const usage = await createOwnUsageProvider({ pids: () => [], exec, platform: 'darwin' })([gpu(0, '0000:01:00.0')]);
    expect(calls).toEqual([]);
    expect(usage).toEqual({ byGpu: new Map(), hostBytes: 0 });
  });

  it('does not ask nvidia-smi when no measured NVIDIA GPU is present', async () => {
    const { exec, calls } = scripted({});
    await createOwnUsageProvider({ pids: () => [7], exec, readFile: noProc, platform: 'linux' })([intel]);
    expect(calls).toEqual([]);
  });

  it('rejects when nvidia-smi fails rather than calling our models "other programs"', async () => {
    const { exec } = scripted({ 'nvidia-smi': new Error('nvidia-smi timed out') });
    const provider = createOwnUsageProvider({ pids: () => [7], exec, readFile: noProc, platform: 'linux' });
    await expect(provider([gpu(0, '0000:01:00.0')])).rejects.toThrow(/timed out/);
  });

  it('reads what our engines hold on an AMD card from their DRM fdinfo, and NVIDIA cards from nvidia-smi', async () => {
    const { exec, calls } = scripted({ 'nvidia-smi': '00000000:01:00.0, 4242, 6144\n' });
    const files: Record<string, string> = {
      '/proc/4242/fdinfo/9': 'drm-driver:\tamdgpu\ndrm-client-id:\t12\ndrm-pdev:\t0000:03:00.0\ndrm-resident-vram:\t4194304 KiB\n',
    };
    const provider = createOwnUsageProvider({
      pids: () => [4242],
      exec,
      readdir: async (dir) => (dir === '/proc/4242/fdinfo' ? ['0', '9'] : []),
      readFile: async (path) => files[path] ?? 'pos:\t0\n',
      platform: 'linux',
    });
    const amd: GpuDevice = { index: 1, name: 'AMD Radeon RX 7900 XTX', vendor: 'AMD', busAddress: '0000:03:00.0', totalBytes: 24560 * MiB, usedBytes: 5000 * MiB, unifiedMemory: false, measuredBy: 'amd-smi' };
    const usage = await provider([{ ...gpu(0, '0000:01:00.0'), measuredBy: 'nvidia-smi' }, amd]);
    expect([...usage.byGpu.entries()].sort()).toEqual([[0, 6144 * MiB], [1, 4096 * MiB]]);
    expect(calls).toEqual(['nvidia-smi --query-compute-apps=gpu_bus_id,pid,used_memory --format=csv,noheader,nounits']);
  });

  it('does not ask nvidia-smi for an NVIDIA card only llama-server measures', async () => {
    const { exec, calls } = scripted({});
    const provider = createOwnUsageProvider({ pids: () => [7], exec, readdir: async () => [], readFile: noProc, platform: 'linux' });
    const usage = await provider([{ ...gpu(0, '0000:01:00.0'), measuredBy: 'llama-server' }]);
    expect(calls).toEqual([]);
    expect(usage.byGpu).toEqual(new Map());
  });

  it('on Linux counts anonymous RSS from /proc, and a vanished process as 0', async () => {
    const statuses: Record<string, string> = {
      '/proc/10/status': 'Name:\tllama-server\nVmRSS:\t 9000000 kB\nRssAnon:\t 2097152 kB\nRssFile:\t 6902848 kB\n',
      '/proc/11/status': 'Name:\tnode\nRssAnon:\t 1024 kB\n',
    };
    const readFile = async (path: string): Promise<string> => {
      const text = statuses[path];
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    };
    const usage = await createOwnUsageProvider({ pids: () => [10, 11, 12, 10], exec: scripted({}).exec, readFile, platform: 'linux' })([]);
    expect(usage.hostBytes).toBe(2097152 * 1024 + 1024 * 1024);
  });

  it('elsewhere asks ps for the RSS of our pids in KiB', async () => {
    const { exec, calls } = scripted({ ps: '  1048576\n   2048\n' });
    const usage = await createOwnUsageProvider({ pids: () => [10, 11], exec, platform: 'darwin' })([]);
    expect(calls).toEqual(['ps -o rss= -p 10,11']);
    expect(usage.hostBytes).toBe((1048576 + 2048) * 1024);
  });

  it('reads RssAnon, or 0 where the line is missing', () => {
    expect(parseRssAnonBytes('RssAnon:\t     12 kB\n')).toBe(12 * 1024);
    expect(parseRssAnonBytes('VmRSS:\t 12 kB\n')).toBe(0);
  });
});
