// The engines a both-engine suite runs on: the embedded engine always, and a real llama-server
// where LLMTRAY_LLAMA_SERVER names one (.ci/run builds it and names it). Unset, llama-server's
// half is reported skipped; set to a file that is not there, the suite fails rather than skip,
// so a typo in CI cannot pass for a green llama-server run.
import { existsSync } from 'node:fs';
import type { EngineKind } from '../../core/contracts/snapshot.js';

export const LLAMA_SERVER = process.env['LLMTRAY_LLAMA_SERVER'];

export interface EngineCase {
  engine: EngineKind;
  skip: boolean;
}

export const ENGINES: readonly EngineCase[] = [
  { engine: 'embedded', skip: false },
  { engine: 'llama-server', skip: LLAMA_SERVER === undefined },
];

/** Throws where a suite on `engine` needs llama-server and LLMTRAY_LLAMA_SERVER names no file. */
export function requireEngine(engine: EngineKind): void {
  if (engine === 'llama-server' && !existsSync(LLAMA_SERVER ?? '')) throw new Error(`LLMTRAY_LLAMA_SERVER names '${LLAMA_SERVER ?? ''}', which does not exist`);
}

/** config.yaml's `engines:` line for a suite on `engine`: no warm spare, and llama-server's binary where that engine runs. */
export function enginesConfigLine(engine: EngineKind): string {
  return `engines: { warmSpare: false${engine === 'llama-server' ? `, llamaServer: ${JSON.stringify(LLAMA_SERVER)}` : ''} }`;
}
