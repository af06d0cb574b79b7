// Per-process GPU memory from the NVIDIA driver, so "used by others" subtracts exactly what
// our engines' pids hold rather than our own estimate of it (estimates forget the compute
// buffer, and a wrong guess here would show phantom "other programs").
//
// Why gpu_bus_id and not only pid,used_memory: the budget is per GPU, and a process can
// hold memory on several; the bus id is the key that matches systeminformation's devices
// (its index order and CUDA's need not agree).
import { canonicalBusAddress } from './normalize-si.js';
import { ToolFailed, type ExecFileText } from './exec-file.js';
import { lostInFailure } from './nvidia-memory.js';
import { sharedAnswer } from './shared-answer.js';
import type { Clock } from '../common/clock.js';

export const COMPUTE_APPS_ARGS = [
  '--query-compute-apps=gpu_bus_id,pid,used_memory',
  '--format=csv,noheader,nounits',
] as const;

export interface ComputeApp {
  /** Canonical 'dddd:bb:dd.f'. */
  busAddress: string;
  pid: number;
  /** null where the driver will not say ("[N/A]" under Windows WDDM, "[Insufficient Permissions]"). */
  usedBytes: number | null;
}

/**
 * Parses `nvidia-smi --query-compute-apps=gpu_bus_id,pid,used_memory --format=csv,noheader,nounits`.
 * Lines that are not three fields with a bus id and a pid (blank lines, "No running
 * processes found") are skipped: they describe no process.
 */
export function parseComputeApps(stdout: string): ComputeApp[] {
  const apps: ComputeApp[] = [];
  for (const line of stdout.split(/\r?\n/)) {
    const fields = line.split(',').map((f) => f.trim());
    if (fields.length !== 3) continue;
    const busAddress = canonicalBusAddress(fields[0] ?? '');
    const pid = Number(fields[1]);
    if (busAddress === null || !Number.isInteger(pid) || pid <= 0) continue;
    const mib = Number(fields[2]);
    apps.push({ busAddress, pid, usedBytes: fields[2] !== '' && Number.isFinite(mib) && mib >= 0 ? mib * 1024 * 1024 : null });
  }
  return apps;
}

/**
 * Runs the query. Blocks for one nvidia-smi call (~20–50 ms); rejects when nvidia-smi fails,
 * unless it failed for a card it lost: the processes it listed on the others stand (nvidia-memory.ts).
 */
export async function queryComputeApps(exec: ExecFileText, nvidiaSmi = 'nvidia-smi'): Promise<ComputeApp[]> {
  try {
    return parseComputeApps(await exec(nvidiaSmi, COMPUTE_APPS_ARGS));
  } catch (error) {
    if (error instanceof ToolFailed && lostInFailure(error) !== null) return parseComputeApps(error.stdout);
    throw error;
  }
}

/** The per-process query as a function of nothing, so several readers can share one. */
export type ComputeAppsReader = () => Promise<ComputeApp[]>;

/**
 * One nvidia-smi query shared by everyone who asks within `freshForMs`: the live budget (what
 * our engines hold, each sample) and the supervisor (what each engine measures, each pass) ask
 * the same question seconds apart, and each answer costs a process spawn and a driver call.
 * A query in flight is joined; a failed one is not kept, so the next caller asks again.
 */
export function sharedComputeAppsReader(
  query: ComputeAppsReader,
  clock: Pick<Clock, 'elapsed'>,
  freshForMs = 1_000,
): ComputeAppsReader {
  return sharedAnswer(query, clock, freshForMs);
}
