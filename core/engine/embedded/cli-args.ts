// Command-line flags of the embedded engine: the subset of llama-server's flags that llmtray
// launches it with, with the same spellings and meanings, so one argv builder serves both
// engines. Anything else is refused by name: silently ignoring a flag would let a launch
// that asked for something (say, a different context) run without it.
import { DEFAULT_BUDGET_BYTES, DEFAULT_MIN_TOKENS } from '../saved-conversations/store.js';

export type GpuLayers = number | 'auto' | 'all';

export interface EngineOptions {
  modelPath: string;
  /** Total context in tokens over all slots, as llama-server's -c; undefined = the model's own. */
  contextSize: number | undefined;
  gpuLayers: GpuLayers;
  draftModelPath: string | undefined;
  draftGpuLayers: GpuLayers;
  threads: number | undefined;
  parallel: number;
  host: string;
  /** 0 asks the OS for a free port; the chosen one is printed on stderr. */
  port: number;
  alias: string | undefined;
  useMmap: boolean;
  apiKey: string | undefined;
  /** A file holding the key (see apiKeyOf); the supervisor's way, so the key is not on the argv. */
  apiKeyFile: string | undefined;
  /** The KV cache's K and V types, llama-server's spellings (`f16`, `q8_0`, …). */
  cacheTypeK: KvCacheType;
  cacheTypeV: KvCacheType;
  /** Where idle slots' conversations are saved to survive the process (saved-slots.ts); undefined: nowhere. */
  slotSavePath: string | undefined;
  /** A conversation of this many tokens or fewer is not saved. */
  slotSaveMinTokens: number;
  /** What all saved conversations under slotSavePath may take, in bytes. */
  slotSaveBudgetBytes: number;
}

/** llama-server's `-ctk`/`-ctv` values. */
export const KV_CACHE_TYPES = ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_1', 'iq4_nl', 'q5_0', 'q5_1'] as const;
export type KvCacheType = (typeof KV_CACHE_TYPES)[number];

export class UsageError extends Error {
  override name = 'UsageError';
}

export const USAGE = `usage: main.js -m MODEL.gguf [options]
  -m,   --model FNAME              model path (required)
  -c,   --ctx-size N               total context size in tokens, shared by the slots (default: from the model)
  -ngl, --n-gpu-layers N           layers to store in VRAM: a number, 'auto' or 'all' (default: auto; 0 = CPU only)
  -md,  --model-draft FNAME        draft model for speculative decoding
  -ngld, --n-gpu-layers-draft N    the same for the draft model
  -t,   --threads N                CPU threads for generation (default: the CPU count)
  -np,  --parallel N               number of slots, i.e. requests served at once (default: 1)
        --host HOST                address to listen on (default: 127.0.0.1)
        --port PORT                port to listen on, 0 for any free port (default: 8080)
  -a,   --alias NAME               model names, comma-separated; the API reports the first (default: the file name)
        --no-mmap, --mmap          whether to memory-map the model (default: mmap)
        --api-key KEY              require 'Authorization: Bearer KEY' on every endpoint but /health
        --api-key-file FNAME       the same with the key read from FNAME (one key; '#' lines are comments)
  -ctk, --cache-type-k TYPE        KV cache type for K: f16 (default), f32, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1
  -ctv, --cache-type-v TYPE        the same for V
        --slot-save-path DIR       save idle slots' conversations there, restore them into a later prompt that shares them
        --slot-save-min-tokens N   save only conversations longer than N tokens (default: 256)
        --slot-save-budget-mib N   all saved conversations under DIR take at most N MiB, least recently used dropped first (default: 4096)
        --metrics, --slots         accepted for llama-server compatibility: /metrics and /slots are always on`;

type Setter = (opts: EngineOptions, value: string, flag: string) => void;

function integer(flag: string, value: string, min: number): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`${flag} expects an integer >= ${min}, got '${value}'`);
  }
  return n;
}

function gpuLayers(flag: string, value: string): GpuLayers {
  if (value === 'auto' || value === 'all') return value;
  return integer(flag, value, 0);
}

const WITH_VALUE: Record<string, Setter> = {};
const SWITCHES: Record<string, (opts: EngineOptions) => void> = {};
function valued(names: string[], set: Setter): void {
  for (const n of names) WITH_VALUE[n] = set;
}
function switched(names: string[], set: (opts: EngineOptions) => void): void {
  for (const n of names) SWITCHES[n] = set;
}

valued(['-m', '--model'], (o, v) => { o.modelPath = v; });
valued(['-c', '--ctx-size'], (o, v, f) => { const n = integer(f, v, 0); o.contextSize = n === 0 ? undefined : n; });
valued(['-ngl', '--n-gpu-layers', '--gpu-layers'], (o, v, f) => { o.gpuLayers = gpuLayers(f, v); });
valued(['-md', '--model-draft'], (o, v) => { o.draftModelPath = v; });
valued(['-ngld', '--n-gpu-layers-draft', '--gpu-layers-draft'], (o, v, f) => { o.draftGpuLayers = gpuLayers(f, v); });
valued(['-t', '--threads'], (o, v, f) => { o.threads = integer(f, v, 1); });
valued(['-np', '--parallel'], (o, v, f) => { o.parallel = integer(f, v, 1); });
valued(['--host'], (o, v) => { o.host = v; });
valued(['--port'], (o, v, f) => { o.port = integer(f, v, 0); if (o.port > 65535) throw new UsageError(`${f} expects a port 0..65535, got ${v}`); });
// llama-server takes a comma-separated list and reports the first name; the rest are extra names.
valued(['-a', '--alias'], (o, v) => { o.alias = v.split(',').map((name) => name.trim()).find((name) => name !== '') ?? v; });
valued(['--api-key'], (o, v, f) => { if (!v) throw new UsageError(`${f} expects a non-empty key`); o.apiKey = v; });
valued(['--api-key-file'], (o, v, f) => { if (!v) throw new UsageError(`${f} expects a file name`); o.apiKeyFile = v; });
function kvCacheType(flag: string, value: string): KvCacheType {
  const type = KV_CACHE_TYPES.find((t) => t === value);
  if (type === undefined) throw new UsageError(`${flag} expects one of ${KV_CACHE_TYPES.join(', ')}, got '${value}'`);
  return type;
}
valued(['-ctk', '--cache-type-k'], (o, v, f) => { o.cacheTypeK = kvCacheType(f, v); });
valued(['-ctv', '--cache-type-v'], (o, v, f) => { o.cacheTypeV = kvCacheType(f, v); });
valued(['--slot-save-path'], (o, v, f) => { if (!v) throw new UsageError(`${f} expects a folder`); o.slotSavePath = v; });
valued(['--slot-save-min-tokens'], (o, v, f) => { o.slotSaveMinTokens = integer(f, v, 0); });
valued(['--slot-save-budget-mib'], (o, v, f) => { o.slotSaveBudgetBytes = integer(f, v, 0) * 1024 * 1024; });
switched(['--no-mmap'], (o) => { o.useMmap = false; });
switched(['--mmap'], (o) => { o.useMmap = true; });
switched(['--metrics', '--slots'], () => {});

/** Parses argv (without node and the script). Pure; throws UsageError naming the bad flag. */
export function parseEngineArgs(argv: readonly string[]): EngineOptions {
  const opts: EngineOptions = {
    modelPath: '', contextSize: undefined, gpuLayers: 'auto', draftModelPath: undefined, draftGpuLayers: 'auto',
    threads: undefined, parallel: 1, host: '127.0.0.1', port: 8080, alias: undefined, useMmap: true, apiKey: undefined,
    apiKeyFile: undefined, cacheTypeK: 'f16', cacheTypeV: 'f16', slotSavePath: undefined,
    slotSaveMinTokens: DEFAULT_MIN_TOKENS, slotSaveBudgetBytes: DEFAULT_BUDGET_BYTES,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const setter = WITH_VALUE[flag];
    if (setter) {
      const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined) throw new UsageError(`${flag} expects a value`);
      setter(opts, value, flag);
      continue;
    }
    const toggle = SWITCHES[flag];
    if (toggle && eq < 0) {
      toggle(opts);
      continue;
    }
    throw new UsageError(`invalid argument: ${arg}`);
  }
  if (!opts.modelPath) throw new UsageError('-m/--model is required');
  if (opts.apiKey !== undefined && opts.apiKeyFile !== undefined) throw new UsageError('give --api-key or --api-key-file, not both');
  return opts;
}

/** Whether the launch puts any layer on a GPU, and so needs a GPU backend initialised. Pure. */
export function usesGpu(opts: EngineOptions): boolean {
  return opts.gpuLayers !== 0 || (opts.draftModelPath !== undefined && opts.draftGpuLayers !== 0);
}

/**
 * The key the engine requires: --api-key's, or the one in --api-key-file read with `readText`
 * (llama-server's format: one key a line, blank lines and lines starting with '#' skipped);
 * undefined when neither is given. Throws UsageError when the file cannot be read or does not
 * hold exactly one key: llama-server accepts several, but this engine checks one, and
 * serving with none would leave the port open.
 */
export function apiKeyOf(opts: EngineOptions, readText: (path: string) => string): string | undefined {
  if (opts.apiKeyFile === undefined) return opts.apiKey;
  let text: string;
  try {
    text = readText(opts.apiKeyFile);
  } catch (error) {
    throw new UsageError(`--api-key-file: cannot read ${opts.apiKeyFile}: ${(error as Error).message}`);
  }
  const keys = text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'));
  if (keys.length !== 1) throw new UsageError(`--api-key-file: ${opts.apiKeyFile} holds ${keys.length} keys; the embedded engine takes exactly one`);
  return keys[0];
}
