import { describe, expect, it } from 'vitest';
import { ToolFailed } from '../../../core/gpu/exec-file.js';
import { createNvidiaMemoryReader, parseNvidiaReading } from '../../../core/gpu/nvidia-memory.js';

const MiB = 1024 ** 2;

describe('parseNvidiaReading', () => {
  it('reads each card by bus address, used as total − free (the driver’s reservation counts)', () => {
    const { cards } = parseNvidiaReading('00000000:01:00.0, 24564, 600, 23618\n00000000:02:00.0, 12288, 0, 12026\n');
    expect([...cards]).toEqual([
      ['0000:01:00.0', { totalBytes: 24564 * MiB, usedBytes: 946 * MiB }],
      ['0000:02:00.0', { totalBytes: 12288 * MiB, usedBytes: 262 * MiB }],
    ]);
  });

  it('skips what is not a card: blank lines, [N/A] figures, a driver’s complaint', () => {
    const reading = parseNvidiaReading('\nFailed to initialize NVML: Driver/library version mismatch\n00000000:03:00.0, [N/A], [N/A], [N/A]\n');
    expect(reading.cards.size).toBe(0);
    // Named without figures: a partial answer, not a card it lost.
    expect([...reading.named]).toEqual(['0000:03:00.0']);
    expect(reading.lost.size).toBe(0);
  });

  it('names the cards nvidia-smi says it cannot reach, with its words, beside those it still measures', () => {
    // As nvidia-smi prints a lost card (JosephKJ/OWOD#81, NVIDIA/open-gpu-kernel-modules#387, pdbear/syno_nvidia_gpu_driver#22: with and without the space).
    const reading = parseNvidiaReading(
      '00000000:01:00.0, 16376, 0, 16100\nUnable to determine the device handle for GPU 0000:03:00.0: GPU is lost.  Reboot the system to recover this GPU\nUnable to determine the device handle for GPU0000:07:00.0: Unknown Error\n',
    );
    expect([...reading.cards.keys()]).toEqual(['0000:01:00.0']);
    expect([...reading.lost]).toEqual([
      ['0000:03:00.0', 'GPU is lost. Reboot the system to recover this GPU'],
      ['0000:07:00.0', 'Unknown Error'],
    ]);
  });
});

describe('createNvidiaMemoryReader', () => {
  const failing = (stdout: string, stderr: string) => async () => {
    throw new ToolFailed('nvidia-smi --query-gpu=… failed: Command failed', stdout, stderr);
  };

  it('reads an answer that names a lost card although nvidia-smi exits non-zero (15: fallen off the bus)', async () => {
    const reading = await createNvidiaMemoryReader(failing('00000000:01:00.0, 16376, 0, 16100\n', 'Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost.  Reboot the system to recover this GPU\n'))();
    expect([...reading.cards.keys()]).toEqual(['0000:01:00.0']);
    expect([...reading.lost.keys()]).toEqual(['0000:03:00.0']);
  });

  it('rejects with the failure when nvidia-smi names no lost card (a driver that does not answer: the live budget holds)', async () => {
    await expect(createNvidiaMemoryReader(failing('Failed to initialize NVML: Driver/library version mismatch\n', ''))()).rejects.toThrow(/Command failed/);
  });
});
