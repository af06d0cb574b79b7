// What a llama-server build accepts, read from its own --help.
//
// Why parse --help instead of comparing version numbers: llama.cpp renames flags often
// (`--draft-max` became `--spec-draft-n-max`; a draft now also needs `--spec-type`), builds
// from forks and distributions carry their own version strings, and a removed flag still
// appears in --help with "the argument has been removed" — so presence alone is not enough
// either. The help text is the one thing that always matches the binary.
import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';

export interface EngineCapabilities {
  /** The `version:` line's value ("0.4.0-dev (build 1, commit 80fb11a)"), or null when unknown. */
  version: string | null;
  /** Every flag the build accepts (short and long spellings), removed ones excluded. */
  flags: ReadonlySet<string>;
  /** The flag that sets how many tokens the draft proposes, or null when there is none. */
  draftMaxFlag: string | null;
  /** The values `--spec-type` lists; empty when the build has no `--spec-type`. */
  specTypes: readonly string[];
  /** `-ngl`/`-ngld` accept 'all' (older builds take numbers only). */
  gpuLayersAll: boolean;
  /**
   * How the build renders chat with the model's own (Jinja) template, which its tool calls and
   * tool turns need: 'default' (recent builds, `--jinja` on unless `--no-jinja`), 'flag' (it
   * must be asked with `--jinja`), 'absent' (only its built-in templates, no tool calls).
   */
  jinja: 'default' | 'flag' | 'absent';
  /** Serves `/v1/embeddings` when started with this flag (`--embeddings`), or null when it cannot. */
  embeddingsFlag: string | null;
}

interface HelpEntry {
  flags: string[];
  /** The flag column after the flags (e.g. "none,draft-simple,…" for --spec-type). */
  placeholder: string;
  description: string;
}

/** A flag token; the look-behind keeps "-simple" in "draft-simple" from counting. */
const FLAG_TOKEN = /(?<![\w-])--?[A-Za-z][\w-]*/g;

/** Parses `--help` and `--version` output. Pure. */
export function detectCapabilities(helpText: string, versionText: string): EngineCapabilities {
  const entries = helpEntries(helpText);
  const live = entries.filter((e) => !/argument has been removed/i.test(e.description));
  const flags = new Set(live.flatMap((e) => e.flags));
  const specType = live.find((e) => e.flags.includes('--spec-type'));
  const gpuLayers = live.find((e) => e.flags.includes('-ngl') || e.flags.includes('--n-gpu-layers'));
  const jinja = live.find((e) => e.flags.includes('--jinja'));
  const draftMaxFlag = ['--spec-draft-n-max', '--draft-max', '--draft'].find((f) => flags.has(f)) ?? null;
  return {
    version: versionOf(versionText) ?? versionOf(helpText),
    flags,
    draftMaxFlag,
    specTypes: specType ? (specType.placeholder.match(/[\w-]+/g) ?? []) : [],
    gpuLayersAll: gpuLayers !== undefined && /'all'/.test(gpuLayers.description),
    jinja: jinja === undefined ? 'absent' : /default:\s*enabled/i.test(jinja.description) ? 'default' : 'flag',
    embeddingsFlag: ['--embeddings', '--embedding'].find((f) => flags.has(f)) ?? null,
  };
}

/**
 * Splits help text into entries: a line starting with '-' opens one; indented lines continue
 * its description. The flag column ends at the first run of two spaces followed by a word
 * (short flags are padded with spaces before their long spelling, so "-t,    --threads" is
 * still one column).
 */
function helpEntries(helpText: string): HelpEntry[] {
  const entries: HelpEntry[] = [];
  for (const line of helpText.split(/\r?\n/)) {
    if (line.startsWith('-')) {
      const split = /\S\s{2,}(?=[^\s-])/.exec(line);
      const column = split ? line.slice(0, split.index + 1) : line;
      const description = split ? line.slice(split.index + split[0].length) : '';
      const flags = column.match(FLAG_TOKEN) ?? [];
      const lastFlag = flags.at(-1);
      const placeholder = lastFlag === undefined ? '' : column.slice(column.lastIndexOf(lastFlag) + lastFlag.length).trim();
      entries.push({ flags, placeholder, description });
    } else if (/^\s+\S/.test(line)) {
      const current = entries.at(-1);
      if (current) current.description += ` ${line.trim()}`;
    }
  }
  return entries;
}

function versionOf(text: string): string | null {
  const match = /^version:\s*(.+)$/m.exec(text);
  return match?.[1]?.trim() ?? null;
}

/** Runs a binary with arguments and gives back stdout + stderr (llama-server prints --version on stderr). */
export type RunForText = (command: string, args: readonly string[]) => Promise<string>;

export interface CapabilityProbeDeps {
  run?: RunForText;
  /** Modification time of the binary in ms; the cache key, so a rebuilt binary is asked again. */
  mtimeOf?: (path: string) => Promise<number>;
}

const cache = new Map<string, Promise<EngineCapabilities>>();

/**
 * The capabilities of the llama-server at `binaryPath`, asked once per binary path and mtime
 * (running --help costs a process start, and every launch needs the answer). Blocks for at most
 * two process runs of 10 s each; rejects when the binary cannot be run, naming it.
 */
export function probeCapabilities(binaryPath: string, deps: CapabilityProbeDeps = {}): Promise<EngineCapabilities> {
  const run = deps.run ?? runForText;
  const mtimeOf = deps.mtimeOf ?? (async (p: string) => (await stat(p)).mtimeMs);
  return mtimeOf(binaryPath).then((mtime) => {
    const key = `${binaryPath}\0${mtime}`;
    let found = cache.get(key);
    if (found === undefined) {
      found = Promise.all([run(binaryPath, ['--help']), run(binaryPath, ['--version'])]).then(([help, version]) =>
        detectCapabilities(help, version),
      );
      // A failed probe is not cached: the binary may be fixed without its mtime changing (a permission).
      found.catch(() => cache.delete(key));
      cache.set(key, found);
    }
    return found;
  });
}

function runForText(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, [...args], { timeout: 10_000, maxBuffer: 4 * 1024 * 1024, windowsHide: true }, (error, stdout, stderr) => {
      const text = `${stdout}\n${stderr}`;
      // --help and --version exit 0 on current builds, but some older ones exit 1 after printing.
      if (error && text.trim() === '') reject(new Error(`could not run '${command} ${args.join(' ')}': ${error.message}`));
      else resolve(text);
    });
  });
}
