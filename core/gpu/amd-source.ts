// The AMD reading the probe merges: amd-smi when it answers, rocm-smi when it does not.
//
// Failure policy, the one real decision here:
// - Neither tool installed (both missing from PATH): no AMD measurement, asked once and never
//   again in this process; lspci's AMD cards stay unmeasured and the budget says why.
// - Installed but failing, before it ever answered: a note for the budget's reason.
// - Failing after it has answered: the reading rejects, so the live budget keeps its last
//   sample. Reporting the cards unmeasured instead would drop them from the budget for one
//   sample, and the controller would evict every model on them over one slow amd-smi call.
import { execFileText, type ExecFileText } from './exec-file.js';
import { AMD_SMI_METRIC_ARGS, AMD_SMI_STATIC_ARGS, joinAmdSmi, parseAmdSmiMetric, parseAmdSmiStatic } from './amd-smi.js';
import { ROCM_SMI_ARGS, parseRocmSmi } from './rocm-smi.js';
import { sharedAnswer } from './shared-answer.js';
import type { AmdReading } from './merge-devices.js';
import { errorMessage } from '../contracts/error-message.js';

/**
 * Reads AMD GPUs' memory. Blocks for one or two tool calls (amd-smi is a Python program:
 * a few hundred ms); `amd-smi static` is asked until it answers once, then never again.
 * Rejects only when a tool that answered before fails (see the header).
 */
export type AmdReader = () => Promise<AmdReading>;

export function createAmdReader(deps: { exec?: ExecFileText; amdSmi?: string; rocmSmi?: string } = {}): AmdReader {
  const exec = deps.exec ?? execFileText;
  const amdSmi = deps.amdSmi ?? 'amd-smi';
  const rocmSmi = deps.rocmSmi ?? 'rocm-smi';
  const staticCards = sharedAnswer(async () => parseAmdSmiStatic(await exec(amdSmi, AMD_SMI_STATIC_ARGS)), { elapsed: () => 0 }, Infinity);
  let absent = false;
  let answered: 'amd-smi' | 'rocm-smi' | null = null;

  const viaAmdSmi = async (): Promise<AmdReading> => {
    const cards = await staticCards();
    const memory = cards.length === 0 ? [] : parseAmdSmiMetric(await exec(amdSmi, AMD_SMI_METRIC_ARGS));
    return { source: 'amd-smi', cards: joinAmdSmi(cards, memory), notes: [] };
  };
  const viaRocmSmi = async (): Promise<AmdReading> => ({ source: 'rocm-smi', cards: parseRocmSmi(await exec(rocmSmi, ROCM_SMI_ARGS)), notes: [] });

  return async () => {
    if (absent) return { source: null, cards: [], notes: [] };
    const order = answered === 'rocm-smi' ? [viaRocmSmi, viaAmdSmi] : [viaAmdSmi, viaRocmSmi];
    const failures: unknown[] = [];
    for (const read of order) {
      try {
        const reading = await read();
        answered = reading.source;
        return reading;
      } catch (error) {
        failures.push(error);
      }
    }
    if (answered !== null) throw new Error(`${answered} answered before and fails now: ${failures.map(errorMessage).join('; ')}`);
    if (failures.every(isMissingTool)) {
      absent = true;
      return { source: null, cards: [], notes: [] };
    }
    const said = failures.filter((e) => !isMissingTool(e)).map(errorMessage);
    return { source: null, cards: [], notes: [`AMD GPUs cannot be measured: ${said.join('; ')}.`] };
  };
}

function isMissingTool(error: unknown): boolean {
  return error instanceof Error && (error.cause as { code?: unknown } | undefined)?.code === 'ENOENT';
}
