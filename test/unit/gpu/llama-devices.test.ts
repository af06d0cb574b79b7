import { describe, expect, it } from 'vitest';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngineDeviceReader, LIST_DEVICES_ARGS, parseListDevices } from '../../../core/gpu/llama-devices.js';
import { FakeClock } from '../../support/fake-clock.js';
import { toolOutput } from '../../support/gpu-tool-output.js';

const MiB = 1024 ** 2;

describe('parseListDevices on captured output', () => {
  it('reads two CUDA cards, ignoring the backend log printed after the list', () => {
    expect(parseListDevices(toolOutput('llama-list-cuda-two.txt'))).toEqual({
      devices: [
        { name: 'CUDA0', backend: 'CUDA', description: 'NVIDIA GeForce RTX 3080 Ti', totalBytes: 11909 * MiB, freeBytes: 11650 * MiB },
        { name: 'CUDA1', backend: 'CUDA', description: 'NVIDIA RTX PRO 4000 Blackwell SFF Edition', totalBytes: 24026 * MiB, freeBytes: 23795 * MiB },
      ],
      notes: [],
    });
  });

  it('keeps a device whose free memory exceeds its total, drops that figure, and says so (llama.cpp#17536)', () => {
    const list = parseListDevices(toolOutput('llama-list-cuda-rtx5090-uma-bug.txt'));
    expect(list.devices).toEqual([{ name: 'CUDA0', backend: 'CUDA', description: 'NVIDIA GeForce RTX 5090', totalBytes: 32106 * MiB, freeBytes: null }]);
    expect(list.notes).toEqual([expect.stringMatching(/CUDA0 NVIDIA GeForce RTX 5090 with 54\.\d GiB free of 31\.\d GiB; that free figure is not used/)]);
  });

  it('reads a ROCm dGPU and the integrated GPU ROCm also lists', () => {
    expect(parseListDevices(toolOutput('llama-list-rocm-dgpu-igpu.txt')).devices.map((d) => [d.name, d.backend, d.description, d.totalBytes / MiB, (d.freeBytes ?? 0) / MiB])).toEqual([
      ['ROCm0', 'ROCm', 'AMD Radeon RX 9070 XT', 16304, 15770],
      ['ROCm1', 'ROCm', 'AMD Radeon Graphics', 63199, 63174],
    ]);
  });

  it('reads Vulkan devices whose descriptions carry marks and parentheses', () => {
    expect(parseListDevices(toolOutput('llama-list-vulkan-igpu-dgpu.txt')).devices.map((d) => [d.name, d.description])).toEqual([
      ['Vulkan0', 'Intel(R) UHD Graphics'],
      ['Vulkan1', 'NVIDIA RTX A2000 Laptop GPU'],
    ]);
    const radv = parseListDevices('Available devices:\n  Vulkan0: AMD Radeon Pro W6800 (RADV NAVI21) (30704 MiB, 29349 MiB free)\n');
    expect(radv.devices[0]).toMatchObject({ description: 'AMD Radeon Pro W6800 (RADV NAVI21)', totalBytes: 30704 * MiB });
  });

  it('reads a CPU-only build as no device', () => {
    expect(parseListDevices(toolOutput('llama-list-cpu-none.txt'))).toEqual({ devices: [], notes: [] });
  });

  it('leaves out RPC devices (with a note), 0 MiB host backends and software rasterisers', () => {
    const stdout = [
      'Available devices:',
      '  RPC[192.168.1.16:50052]: RPC[192.168.1.16:50052] (16304 MiB, 15232 MiB free)',
      '  BLAS: OpenBLAS (0 MiB, 0 MiB free)',
      '  Vulkan0: llvmpipe (LLVM 15.0.7, 256 bits) (64000 MiB, 64000 MiB free)',
      '  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23700 MiB free)',
    ].join('\n');
    const list = parseListDevices(stdout);
    expect(list.devices.map((d) => d.name)).toEqual(['CUDA0']);
    expect(list.notes).toEqual([expect.stringMatching(/RPC\[192\.168\.1\.16:50052\], another machine's memory/)]);
  });

  it('throws when the output has no device list, quoting its start', () => {
    expect(() => parseListDevices('error while loading shared libraries: libcudart.so.12: cannot open shared object file\n')).toThrow(
      /printed no device list: "error while loading shared libraries/,
    );
  });
});

describe('createEngineDeviceReader', () => {
  const listing = 'Available devices:\n  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23700 MiB free)\n';

  it('runs the binary it was given with --list-devices, once per freshness window', async () => {
    const clock = new FakeClock();
    const calls: string[] = [];
    const read = createEngineDeviceReader('/opt/llama/bin/llama-server', {
      exec: async (file, args) => { calls.push([file, ...args].join(' ')); return listing; },
      clock,
      freshForMs: 60_000,
    });
    expect(LIST_DEVICES_ARGS).toEqual(['--list-devices']);
    await Promise.all([read(), read()]);
    await clock.advance(59_999);
    expect((await read()).devices.map((d) => d.name)).toEqual(['CUDA0']);
    expect(calls).toEqual(['/opt/llama/bin/llama-server --list-devices']);
    await clock.advance(1);
    await read();
    expect(calls).toHaveLength(2);
  });

  it('never rejects: a failed listing answers with the last good list and a note, and is kept for the window too', async () => {
    const clock = new FakeClock();
    let fail = false;
    let runs = 0;
    const read = createEngineDeviceReader('llama-server', {
      exec: async () => { runs++; if (fail) throw new Error('llama-server --list-devices failed: timed out'); return listing; },
      clock,
      freshForMs: 1_000,
    });
    await read();
    fail = true;
    await clock.advance(1_000);
    const stale = await read();
    expect(stale.devices.map((d) => d.name)).toEqual(['CUDA0']);
    expect(stale.notes).toEqual([expect.stringMatching(/device list could not be read \(llama-server --list-devices failed: timed out\); the last list is used/)]);
    await read();
    expect(runs).toBe(2);
  });

  it('with no good list yet, a failure is no devices and a note', async () => {
    const read = createEngineDeviceReader('llama-server', { exec: async () => { throw new Error('spawn llama-server ENOENT'); } });
    expect(await read()).toEqual({ devices: [], notes: [expect.stringMatching(/could not be read \(spawn llama-server ENOENT\)\.$/)] });
  });
});

describe('createEngineDeviceReader with the engines\' environment', () => {
  it('lists the devices the engines will see: the listing runs with their variables', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'llmtray-list-devices-'));
    try {
      // A llama-server that, like a real one, lists only the devices CUDA_VISIBLE_DEVICES lets it see.
      const bin = join(dir, 'llama-server');
      await writeFile(bin, [
        '#!/bin/sh',
        'echo "Available devices:"',
        'if [ "$CUDA_VISIBLE_DEVICES" = 1 ]; then',
        '  echo "  CUDA0: NVIDIA GeForce RTX 3060 (11910 MiB, 11700 MiB free)"',
        'else',
        '  echo "  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23700 MiB free)"',
        '  echo "  CUDA1: NVIDIA GeForce RTX 3060 (11910 MiB, 11700 MiB free)"',
        'fi',
      ].join('\n'));
      await chmod(bin, 0o755);
      const all = await createEngineDeviceReader(bin)();
      const onlySecond = await createEngineDeviceReader(bin, { env: { CUDA_VISIBLE_DEVICES: '1' } })();
      expect(all.devices.map((d) => `${d.name} ${d.description}`)).toEqual(['CUDA0 NVIDIA GeForce RTX 4090', 'CUDA1 NVIDIA GeForce RTX 3060']);
      expect(onlySecond.devices.map((d) => `${d.name} ${d.description}`)).toEqual(['CUDA0 NVIDIA GeForce RTX 3060']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
