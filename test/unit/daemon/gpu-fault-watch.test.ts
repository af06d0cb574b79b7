// The daemon's step between an engine's fault and the budget: which card it suspects, and with what words.
import { describe, expect, it } from 'vitest';
import { suspectFaultyGpus } from '../../../core/daemon/gpu-fault-watch.js';
import type { ServerEvent } from '../../../core/contracts/server-events.js';
import type { BudgetSample } from '../../../core/gpu/live-budget.js';

function rig() {
  let listener: (event: ServerEvent) => void = () => {};
  const suspected: [string, string][] = [];
  const warnings: string[] = [];
  const sample = { perGpu: [{ index: 0, name: 'NVIDIA RTX A4000', busAddress: '0000:01:00.0' }, { index: 1, name: 'NVIDIA RTX A4000', busAddress: '0000:03:00.0' }] } as unknown as BudgetSample;
  suspectFaultyGpus(
    { onServerEvent: (l) => ((listener = l), () => {}) },
    { current: () => sample, suspect: (bus, why) => (suspected.push([bus, why]), true) },
    { info: () => {}, warn: (m: string) => warnings.push(m), error: () => {} } as never,
  );
  const exited = (gpuFault: Extract<ServerEvent, { type: 'ServerExited' }>['gpuFault']): void =>
    listener({ type: 'ServerExited', modelId: 'chat', level: 'full', pid: 7, kind: 'crash', reason: 'r', wasReady: true, exitCode: null, signal: 'SIGABRT', at: 0, ...(gpuFault === undefined ? {} : { gpuFault }) });
  return { exited, suspected, warnings };
}

describe('suspectFaultyGpus', () => {
  it('suspects the card the fault names, by the plan’s GPU or by its PCI address, with the engine’s words', () => {
    const { exited, suspected, warnings } = rig();
    exited({ line: 'CUDA error: unspecified launch failure', cudaDevice: 1, busAddress: null, cardLost: false, gpu: 1 });
    exited({ line: 'NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.', cudaDevice: null, busAddress: '0000:01:00.0', cardLost: true, gpu: null });
    expect(suspected).toEqual([
      ['0000:03:00.0', "chat's engine said: CUDA error: unspecified launch failure"],
      ['0000:01:00.0', "chat's engine said: NVRM: GPU 0000:01:00.0: GPU has fallen off the bus."],
    ]);
    expect(warnings[0]).toMatch(/^GPU 1 NVIDIA RTX A4000 \(0000:03:00\.0\) is suspect: /);
  });

  it('suspects nothing for a failure without a fault of the card, and says so for a card it cannot tell', () => {
    const { exited, suspected, warnings } = rig();
    exited(undefined);
    exited({ line: 'CUDA error: unspecified launch failure', cudaDevice: 4, busAddress: null, cardLost: false, gpu: null });
    expect(suspected).toEqual([]);
    expect(warnings).toEqual(["chat's engine reported a fault of a GPU the budget cannot tell (CUDA error: unspecified launch failure); no GPU is suspected"]);
  });
});
