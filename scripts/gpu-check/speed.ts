// gpu-check's speed phase, its first half: the engine race of `npm run bench`
// (test/bench/engine-race-bench.ts) with every layer on the GPU, so that the first lent GPU
// machine gives the race's figures in the same call as the memory checks (issue 41); the
// returning conversation follows on the same models (returning.ts). It prints and claims nothing else: it never
// changes the memory checks' exit code, and each table is followed by what each engine's own log
// said about where its layers went, so a figure from an engine that fell back to the CPU is not
// read as a GPU figure.
//
// The race code stays in test/bench, which tsconfig.build.json compiles beside this script
// (dist/test/bench), so `npm run bench` and gpu-check race the same way; lint-layers' rules
// cover core/, renderer/ and electron/ only.
import { removeBenchFiles } from '../../test/bench/bench-models.js';
import { llamaServerPath, roundsFromEnv } from '../../test/bench/bench-env.js';
import { printRace, raceContenders, raceOnModel, type RaceContender } from '../../test/bench/engine-race-bench.js';
import { llamaQuantizePath, realShapeCacheDir, realShapeModel, type RealShapeId, type RealShapeQuant } from '../../test/bench/real-shape/real-shape-models.js';

/** Every layer on the GPU: more than any of the raced models has. */
export const GPU_LAYERS = 999;
/** Rounds per model where LLMTRAY_RACE_ROUNDS does not say: few, the lent machine's minutes are few. */
export const DEFAULT_RACE_ROUNDS = 3;

/** LLMTRAY_RACE_ROUNDS, else 3; throws, naming the variable, on anything but a whole number ≥ 1. */
export function raceRounds(): number {
  return roundsFromEnv('LLMTRAY_RACE_ROUNDS', DEFAULT_RACE_ROUNDS);
}

export type RacedModel = { kind: 'demo-chat'; label: string } | { kind: 'real-shape'; label: string; shape: RealShapeId; quant: RealShapeQuant };

/**
 * What the speed phase races, in order, and what it leaves out with the reason: demo-chat, the
 * real-shape Llama 3.2 1B in Q8_0 (written here, needs nothing) and in Q4_K_M when a
 * llama-quantize is found (`quantize`, its path or null).
 */
export function speedPlan(quantize: string | null): { models: RacedModel[]; skipped: string[] } {
  const models: RacedModel[] = [
    { kind: 'demo-chat', label: 'demo-chat (f16, 46 MiB, 358 tokens), every layer on the GPU' },
    { kind: 'real-shape', label: 'llama-3.2-1b Q8_0, every layer on the GPU', shape: 'llama-3.2-1b', quant: 'Q8_0' },
  ];
  const skipped: string[] = [];
  if (quantize !== null) models.push({ kind: 'real-shape', label: 'llama-3.2-1b Q4_K_M, every layer on the GPU', shape: 'llama-3.2-1b', quant: 'Q4_K_M' });
  else skipped.push('llama-3.2-1b Q4_K_M: not raced: no llama-quantize (set LLMTRAY_LLAMA_QUANTIZE, or build it beside the llama-server raced)');
  return { models, skipped };
}

/** What an engine's log says about its offload: "offloaded 17/17 layers to GPU" lines, or null when it says none. */
export function offloadOf(lines: readonly string[]): { offloaded: number; total: number } | null {
  let found: { offloaded: number; total: number } | null = null;
  for (const line of lines) {
    const m = /offloaded (\d+)\/(\d+) layers to GPU/.exec(line);
    if (m) found = { offloaded: Number(m[1]), total: Number(m[2]) };
  }
  return found;
}

/** One line per contender: where its log put the layers, on every start of this model. */
export function offloadLines(byContender: ReadonlyMap<string, readonly (readonly string[])[]>): string[] {
  const out: string[] = [];
  for (const [name, starts] of byContender) {
    const seen = starts.map(offloadOf);
    const all = seen.length > 0 && seen.every((o) => o !== null && o.offloaded === o.total && o.total > 0);
    const first = seen.find((o) => o !== null) ?? null;
    if (all && first !== null) out.push(`  ${name}: every start's log says ${first.offloaded}/${first.total} layers offloaded to the GPU`);
    else if (first === null) out.push(`  ${name}: NOT CONFIRMED ON THE GPU: its log never said it offloaded layers (${seen.length} starts); read its figures as unverified, maybe the CPU's`);
    else out.push(`  ${name}: NOT ALL ON THE GPU: its logs said ${seen.map((o) => (o === null ? 'nothing' : `${o.offloaded}/${o.total}`)).join(', ')} layers offloaded`);
  }
  return out;
}

/** Wraps each contender so that the log of every engine it starts is kept, per start (the engine's own lines array, which fills as it prints). */
function recording(contenders: readonly RaceContender[]): { contenders: RaceContender[]; logs: () => Map<string, string[][]> } {
  const started = new Map<string, { text: string }[][]>(contenders.map((c) => [c.name, []]));
  return {
    logs: () => new Map([...started].map(([name, starts]) => [name, starts.map((lines) => lines.map((l) => l.text))])),
    contenders: contenders.map((c) => ({
      name: c.name,
      start: async (path: string) => {
        const engine = await c.start(path);
        started.get(c.name)?.push(engine.lines);
        return engine;
      },
    })),
  };
}

export interface SpeedOutcome {
  raced: string[];
  failed: string[];
  skipped: string[];
}

/**
 * Races the engines on each planned model, `rounds` rounds each, printing printRace's table and
 * the offload lines per model. A model that cannot be raced is reported and the next one tried.
 */
export async function runSpeedPhase(demoChatPath: string, rounds: number, say: (line: string) => void): Promise<SpeedOutcome> {
  const plan = speedPlan(llamaQuantizePath());
  const outcome: SpeedOutcome = { raced: [], failed: [], skipped: [...plan.skipped] };
  const server = llamaServerPath();
  try {
    const base = raceContenders(GPU_LAYERS);
    say('');
    say(`## speed: the engine race, every layer on the GPU (gpuLayers ${GPU_LAYERS}), ${rounds} rounds per model after one unmeasured, one engine resident at a time`);
    say(`contenders: ${base.map((c) => c.name).join(', ')}${server === null ? ' (no llama-server: set LLMTRAY_LLAMA_SERVER to race one; the embedded engine runs alone)' : ` (llama-server: ${server})`}`);
    say(`real-shape models: cached in ${realShapeCacheDir()} (LLMTRAY_BENCH_MODELS)`);
    for (const line of plan.skipped) say(`speed: ${line}`);
    for (const model of plan.models) {
      const { contenders, logs } = recording(base);
      try {
        const path = model.kind === 'demo-chat' ? demoChatPath : (await realShapeModel(model.shape, model.quant, say)).path;
        const result = await raceOnModel({ label: model.label, path }, contenders, rounds);
        printRace(result);
        for (const line of offloadLines(logs())) say(line);
        outcome.raced.push(model.label);
      } catch (error) {
        say(`speed: ${model.label}: not raced: ${error instanceof Error ? error.message : String(error)}`);
        outcome.failed.push(model.label);
      }
    }
  } finally {
    await removeBenchFiles();
  }
  say(`speed: raced ${outcome.raced.length} of ${outcome.raced.length + outcome.failed.length + outcome.skipped.length} models${outcome.failed.length > 0 ? `; not raced: ${outcome.failed.join('; ')}` : ''}${outcome.skipped.length > 0 ? `; left out: ${outcome.skipped.length}` : ''}`);
  return outcome;
}
