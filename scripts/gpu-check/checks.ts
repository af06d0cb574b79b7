// What `npm run gpu-check` compares and how it words the verdict: per model and GPU, the bytes
// its placement put there (the daemon's estimate) against the driver's figure for the engine's
// pid on that GPU. Pure, so the verdicts and the exit codes are table-tested without a GPU.
import type { Placement } from '../../core/policy/place.js';
import { formatBytes } from '../../core/policy/reasons.js';

/** Off by more than this share of the estimate, either way, fails (issue 11). */
export const TOLERANCE = 0.1;

/**
 * The exit codes, each one thing: a person (or CI) must never read "nothing was checked" as a pass.
 * - pass: every check within 10 %;
 * - off: at least one estimate off by more than 10 %, or an engine not where its placement put it;
 * - incomplete: the check could not run as planned (the daemon or a model load failed, a
 *   placement the machine allows could not be forced); whatever was compared is printed, but
 *   nothing is claimed;
 * - noGpu: no GPU whose memory can be measured; nothing was checked.
 */
export const EXIT = { pass: 0, off: 1, incomplete: 2, noGpu: 3 } as const;

export interface Check {
  /** The placement the daemon gave the model for this check. */
  placement: Placement['kind'];
  modelId: string;
  gpu: { index: number; name: string };
  /** Its placement's bytes on this GPU (0 where the placement put nothing on it). */
  estimateBytes: number;
  /** The driver's figure for the engine's pid on this GPU; null when the driver does not list the pid there. */
  driverBytes: number | null;
}

/**
 * One check per GPU the placement uses, and one more per GPU where the driver lists the engine
 * although its placement put nothing there (an engine that ignored the devices it was given).
 */
export function checksOf(
  modelId: string,
  placement: Placement,
  gpuNames: ReadonlyMap<number, string>,
  driverByGpu: ReadonlyMap<number, number>,
): Check[] {
  const gpu = (index: number) => ({ index, name: gpuNames.get(index) ?? 'unknown GPU' });
  const placed = placement.devices.map((d) => ({ placement: placement.kind, modelId, gpu: gpu(d.index), estimateBytes: d.bytes, driverBytes: driverByGpu.get(d.index) ?? null }));
  const stray = [...driverByGpu]
    .filter(([index, bytes]) => bytes > 0 && !placement.devices.some((d) => d.index === index))
    .sort(([a], [b]) => a - b)
    .map(([index, bytes]) => ({ placement: placement.kind, modelId, gpu: gpu(index), estimateBytes: 0, driverBytes: bytes }));
  return [...placed, ...stray];
}

/** (driver − estimate) / estimate; null when the driver does not list the engine there; Infinity where nothing was estimated. */
export function offBy(check: Check): number | null {
  if (check.driverBytes === null) return null;
  if (check.estimateBytes <= 0) return check.driverBytes > 0 ? Infinity : 0;
  return (check.driverBytes - check.estimateBytes) / check.estimateBytes;
}

export function passes(check: Check): boolean {
  const off = offBy(check);
  return off !== null && Math.abs(off) <= TOLERANCE;
}

/** "gpu      demo-chat    GPU 0 NVIDIA H200: estimate 612 MiB, driver 640 MiB, +4.6 %: ok". */
export function checkLine(check: Check): string {
  return `${check.placement.padEnd(8)} ${check.modelId.padEnd(12)} GPU ${check.gpu.index} ${check.gpu.name}: ${figures(check)}`;
}

/** "estimate 612 MiB, driver 640 MiB, +4.6 %: ok". */
function figures(check: Check): string {
  const off = offBy(check);
  const driver = check.driverBytes === null ? 'the driver does not list its engine there' : `driver ${formatBytes(check.driverBytes)}`;
  const percent = off === null || !Number.isFinite(off) ? '' : `, ${off >= 0 ? '+' : ''}${(off * 100).toFixed(1)} %`;
  const verdict = passes(check) ? 'ok' : check.estimateBytes <= 0 ? 'OFF: its placement put nothing on this GPU' : `OFF by more than ${TOLERANCE * 100} %`;
  return `estimate ${formatBytes(check.estimateBytes)}, ${driver}${percent}: ${verdict}`;
}

/**
 * The closing lines and the exit code. `incomplete` lists what could not be done as planned;
 * any of it makes the run incomplete unless a check already failed (a failure is the stronger news).
 */
export function verdictOf(checks: readonly Check[], incomplete: readonly string[]): { lines: string[]; exitCode: number } {
  const failed = checks.filter((c) => !passes(c));
  const lines: string[] = [];
  for (const c of failed) lines.push(`OFF: ${c.modelId} on GPU ${c.gpu.index} ${c.gpu.name} (${c.placement}): ${figures(c)}`);
  for (const what of incomplete) lines.push(`NOT CHECKED: ${what}`);
  if (failed.length > 0) {
    lines.push(`gpu-check: ${failed.length} of ${checks.length} checks off by more than ${TOLERANCE * 100} %`);
    return { lines, exitCode: EXIT.off };
  }
  if (incomplete.length > 0 || checks.length === 0) {
    lines.push(`gpu-check: incomplete: ${checks.length} checks within ${TOLERANCE * 100} %, but not everything the machine allows was checked; this is not a pass`);
    return { lines, exitCode: EXIT.incomplete };
  }
  lines.push(`gpu-check: pass: all ${checks.length} checks within ${TOLERANCE * 100} %`);
  return { lines, exitCode: EXIT.pass };
}
