// gpu-check's command line, parsed apart from the script so that what it accepts and refuses is
// unit-tested without starting anything (test/unit/gpu-check-options.test.ts).
import { resolve } from 'node:path';

export type Kind = 'gpu' | 'split' | 'partial';
export const KINDS: readonly Kind[] = ['gpu', 'split', 'partial'];

/** The phases `--only` can name: the memory checks, or the speed phase (the race, speed.ts, and the returning conversation, returning.ts) alone. */
export type Phase = 'memory' | 'speed';
const ONLY: readonly Phase[] = ['speed'];

export interface Options {
  placements: Kind[];
  workDir: string | null;
  /** Run the memory checks (all but `--only speed`). */
  memory: boolean;
  /** Run the speed phase after them (all but `--no-speed`). */
  speed: boolean;
  /** In the speed phase, the returning conversation after the race (all but `--no-return`). */
  returning: boolean;
}

export const USAGE = 'usage: npm run gpu-check -- [--placements gpu,split,partial] [--work-dir DIR] [--no-speed | --only speed] [--no-return]';

/** The options `argv` asks for; throws, naming the argument, on anything it does not know. */
export function parseOptions(argv: readonly string[]): Options {
  const options: Options = { placements: [...KINDS], workDir: null, memory: true, speed: true, returning: true };
  let only: Phase | null = null;
  let noSpeed = false;
  let placementsGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    if (arg === '--placements' && value !== undefined) {
      const kinds = value.split(',').map((k) => k.trim());
      const unknown = kinds.filter((k) => !(KINDS as readonly string[]).includes(k));
      if (unknown.length > 0) throw new Error(`--placements: unknown ${unknown.join(', ')}; expected some of ${KINDS.join(',')}`);
      options.placements = kinds as Kind[];
      placementsGiven = true;
      i++;
    } else if (arg === '--work-dir' && value !== undefined) {
      options.workDir = resolve(value);
      i++;
    } else if (arg === '--only' && value !== undefined) {
      if (!(ONLY as readonly string[]).includes(value)) throw new Error(`--only: unknown '${value}'; expected ${ONLY.join(' or ')} (the memory checks alone are --no-speed)`);
      only = value as Phase;
      i++;
    } else if (arg === '--no-speed') {
      noSpeed = true;
    } else if (arg === '--no-return') {
      options.returning = false;
    } else throw new Error(`unknown argument '${arg}'; ${USAGE}`);
  }
  if (only === 'speed' && noSpeed) throw new Error(`--only speed and --no-speed leave nothing to run; ${USAGE}`);
  if (only === 'speed' && placementsGiven) throw new Error(`--placements chooses memory checks, which --only speed does not run; ${USAGE}`);
  options.memory = only !== 'speed';
  options.speed = !noSpeed;
  // No speed phase, no returning conversation: the field says what runs.
  if (noSpeed) options.returning = false;
  return options;
}
