// The verdicts of `npm run gpu-check` (scripts/gpu-check/checks.ts): per model and GPU, the
// placement's bytes against the driver's figure, and one exit code per outcome.
import { describe, expect, it } from 'vitest';
import { checkLine, checksOf, EXIT, passes, verdictOf, type Check } from '../../scripts/gpu-check/checks.js';
import type { Placement } from '../../core/policy/place.js';

const MiB = 1024 ** 2;
const names = new Map([
  [0, 'NVIDIA GeForce RTX 3090'],
  [1, 'NVIDIA GeForce RTX 3090'],
]);
const split: Placement = {
  kind: 'split',
  devices: [
    { index: 1, layers: 4, bytes: 600 * MiB },
    { index: 0, layers: 4, bytes: 500 * MiB },
  ],
  cpuMoeLayers: 0,
  hostBytes: 0,
};
const check = (estimateMiB: number, driverMiB: number | null): Check => ({
  placement: 'gpu',
  modelId: 'demo-chat',
  gpu: { index: 0, name: 'NVIDIA H200' },
  estimateBytes: estimateMiB * MiB,
  driverBytes: driverMiB === null ? null : driverMiB * MiB,
});

describe('gpu-check verdicts', () => {
  it('checks every GPU of the placement, and a GPU the driver lists the engine on where its placement put nothing', () => {
    const checks = checksOf('demo-chat', split, names, new Map([[0, 520 * MiB], [1, 610 * MiB]]));
    expect(checks.map((c) => [c.gpu.index, c.estimateBytes / MiB, (c.driverBytes ?? 0) / MiB])).toEqual([[1, 600, 610], [0, 500, 520]]);
    const onOne: Placement = { kind: 'gpu', devices: [{ index: 1, layers: 8, bytes: 600 * MiB }], cpuMoeLayers: 0, hostBytes: 0 };
    const stray = checksOf('demo-chat', onOne, names, new Map([[0, 300 * MiB]]));
    expect(stray.map((c) => [c.gpu.index, c.estimateBytes, c.driverBytes])).toEqual([[1, 600 * MiB, null], [0, 0, 300 * MiB]]);
    expect(stray.some(passes)).toBe(false);
    expect(checkLine(stray[0] as Check)).toContain('the driver does not list its engine there');
    expect(checkLine(stray[1] as Check)).toContain('its placement put nothing on this GPU');
  });

  it.each([
    [1000, 1100, true],
    [1000, 900, true],
    [1000, 1101, false],
    [1000, 899, false],
    [1000, null, false],
  ])('an estimate of %i MiB against a driver figure of %s MiB passes: %s', (estimate, driver, ok) => {
    expect(passes(check(estimate, driver))).toBe(ok);
  });

  it('exits 0 only when everything was checked and within 10 %; 1 when one is off; 2 when something could not be checked', () => {
    expect(verdictOf([check(1000, 1050)], []).exitCode).toBe(EXIT.pass);
    const off = verdictOf([check(1000, 1050), check(1000, 1300)], ['split: no limit']);
    expect(off.exitCode).toBe(EXIT.off);
    expect(off.lines[0]).toBe('OFF: demo-chat on GPU 0 NVIDIA H200 (gpu): estimate 1000 MiB, driver 1.3 GiB, +30.0 %: OFF by more than 10 %');
    expect(verdictOf([check(1000, 1050)], ['split: no limit']).exitCode).toBe(EXIT.incomplete);
    expect(verdictOf([], []).exitCode).toBe(EXIT.incomplete);
    expect(new Set(Object.values(EXIT)).size).toBe(4);
  });
});
