// How big a soak is: the short one runs inside `npm test`, the full one is `npm run soak`.
// Swaps are the unit of work because a swap (~3–4 s here: stop one engine, start another with
// a 0.5 GiB cache) is what costs, and what the soak is about.

export type FaultKind = 'crash' | 'hang' | 'oom' | 'invalid' | 'slow-load' | 'client-abort' | 'daemon-kill';

/** Every fault, in the order the table lists them. */
export const FAULT_KINDS: readonly FaultKind[] = ['crash', 'hang', 'oom', 'invalid', 'slow-load', 'client-abort', 'daemon-kill'];

/** The faults injected while one daemon lives (all but its kill). */
export const IN_LIFE_FAULTS: readonly FaultKind[] = ['crash', 'hang', 'oom', 'invalid', 'slow-load', 'client-abort'];

export interface Profile {
  name: 'short' | 'full';
  /** Traffic clients (the fault injector's own requests come on top). */
  clients: number;
  /** Request-driven swaps to reach before the run ends. */
  targetSwaps: number;
  /** Rounds of IN_LIFE_FAULTS: each such fault is injected this many times. */
  rounds: number;
  /** `kill -9` of the daemon and a restart on the same data dir, all in the first part of the run. */
  daemonKills: number;
  /** Swaps between two faults. */
  swapsBetweenFaults: number;
  /** The run gives up (and says so in the verdict) after this long. */
  maxDurationMs: number;
}

export const PROFILES: Record<Profile['name'], Profile> = {
  short: { name: 'short', clients: 2, targetSwaps: 30, rounds: 1, daemonKills: 1, swapsBetweenFaults: 1, maxDurationMs: 20 * 60_000 },
  full: { name: 'full', clients: 3, targetSwaps: 500, rounds: 4, daemonKills: 3, swapsBetweenFaults: 14, maxDurationMs: 180 * 60_000 },
};

export interface SoakOptions {
  profile: Profile;
  /** Write the daemons' logs, every request's outcome and the table there. */
  outDir: string | null;
  /** Keep the work dir (models, data dir) instead of removing it. */
  keep: boolean;
}

export class SoakUsageError extends Error {
  override name = 'SoakUsageError';
}

export const SOAK_USAGE = `usage: npm run soak [-- --short] [--clients N] [--swaps N] [--out DIR] [--keep]
  --short       the short profile (${PROFILES.short.targetSwaps} swaps, each fault once); default the full one (${PROFILES.full.targetSwaps} swaps)
  --clients N   traffic clients, 2 to 4 (default ${PROFILES.short.clients} short, ${PROFILES.full.clients} full)
  --swaps N     swaps to reach (default the profile's)
  --out DIR     write the daemons' logs, the requests' outcomes and the table into DIR
  --keep        keep the work dir (models, data dir) after the run`;

function whole(flag: string, value: string | undefined, min: number, max: number): number {
  const n = Number(value);
  if (value === undefined || !/^\d+$/.test(value) || n < min || n > max) {
    throw new SoakUsageError(`${flag}: expected a whole number from ${min} to ${max}, got ${value === undefined ? 'nothing' : `'${value}'`}`);
  }
  return n;
}

/** The options from the command line; throws SoakUsageError naming the flag that is wrong. */
export function parseSoakArgs(argv: readonly string[]): SoakOptions {
  let profile = PROFILES.full;
  let clients: number | undefined;
  let swaps: number | undefined;
  let outDir: string | null = null;
  let keep = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    switch (flag) {
      case '--short':
        profile = PROFILES.short;
        break;
      case '--clients':
        clients = whole(flag, argv[++i], 2, 4);
        break;
      case '--swaps':
        swaps = whole(flag, argv[++i], 1, 100_000);
        break;
      case '--out': {
        const dir = argv[++i];
        if (dir === undefined || dir.startsWith('--')) throw new SoakUsageError('--out: expected a folder');
        outDir = dir;
        break;
      }
      case '--keep':
        keep = true;
        break;
      default:
        throw new SoakUsageError(`unknown argument '${flag}'\n${SOAK_USAGE}`);
    }
  }
  return { profile: { ...profile, clients: clients ?? profile.clients, targetSwaps: swaps ?? profile.targetSwaps }, outDir, keep };
}

export interface EpisodePlan {
  /** Injected while the daemon is killed and restarted: its kills, spread among one round of the rest when there are several rounds. */
  restarts: FaultKind[];
  /** Injected into the last daemon's life during its warm-up, before it is first measured at rest. */
  warmUp: FaultKind[];
  /** Injected into the last daemon's life after its warm-up, where leaks are measured. */
  lastLife: FaultKind[];
}

/**
 * Which fault comes when. The daemon's kills all come first so that the last daemon lives through
 * most of the run: its descriptors and memory are measured from its warm-up to the end. Its
 * warm-up holds one round of the other faults: what a path allocates the first time it runs (its
 * code compiled, the log ring of a model first launched: big, slow, broken, chat-c) is no leak,
 * and a baseline taken before the faults' first run counts it as one (the short soak read
 * +15.8 MB so; with the round in the warm-up, the next run read -0.7 MB).
 */
export function planEpisodes(profile: Profile): EpisodePlan {
  const spread = profile.rounds > 1 && profile.daemonKills > 0 ? [...IN_LIFE_FAULTS] : [];
  const restarts: FaultKind[] = [];
  const chunk = Math.ceil(spread.length / Math.max(1, profile.daemonKills));
  for (let i = 0; i < profile.daemonKills; i++) restarts.push(...spread.slice(i * chunk, (i + 1) * chunk), 'daemon-kill');
  restarts.push(...spread.slice(profile.daemonKills * chunk));
  const rounds: FaultKind[][] = [];
  for (let r = spread.length > 0 ? 1 : 0; r < profile.rounds; r++) rounds.push([...IN_LIFE_FAULTS]);
  return { restarts, warmUp: rounds[0] ?? [], lastLife: rounds.slice(1).flat() };
}
