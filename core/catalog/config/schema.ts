// The config file's schema: what each field accepts and, as its message, what was expected.
//
// Every message here is the "expected …" half of an error; format-issues.ts adds the file, the
// field path and the value that was there, so no message repeats them. Objects are strict: a
// misspelt key ("gpu_layers") would otherwise be ignored silently and the person would wonder
// why the setting has no effect.
import { z } from 'zod';
import { DURATION_EXPECTATION, parseDuration, parseSize, SIZE_EXPECTATION } from './units.js';
import type { EngineKind } from '../../contracts/snapshot.js';

export type GpuLayers = number | 'all';
export type EngineChoice = 'auto' | EngineKind;
/** A model's `engineArgs`: arguments for one engine only, by the engine's name. */
export type EngineArgs = Partial<Record<EngineKind, string[]>>;
export const ENGINE_CHOICES: readonly EngineChoice[] = ['auto', 'embedded', 'llama-server'];

export const DEFAULT_LISTEN = { host: '127.0.0.1', port: 11435 } as const;
/** Head-room left to the desktop and other programs when nothing is configured. */
export const DEFAULT_RESERVE_BYTES = 512 * 2 ** 20;
export const DEFAULT_ACTIVATION_WAIT_MS = 45_000;
export const DEFAULT_IDLE_TTL_MS = 10 * 60_000;
export { DEFAULT_HANG_LIMIT_MS } from '../../engine/hang-limit.js';
/** How long a busy model keeps taking new requests while another waits for its memory; shorter than activationWait (load-config.ts refuses it otherwise). */
export const DEFAULT_SWAP_TURN_MS = 2_000;
/**
 * How long the config in force outlives its file's deletion: an editor that saves by writing a
 * temporary, deleting and renaming, or a deletion undone, must not unload every configured model.
 */
export const DEFAULT_DELETED_CONFIG_GRACE_MS = 30_000;
/** How many served requests the daemon keeps in memory (`activity.keep`). */
export const DEFAULT_ACTIVITY_KEEP = 1000;
const TOKEN_COUNT_EXPECTATION = 'expected a whole number of tokens, 0 or more';
/** llama.cpp's LLAMA_MAX_SEQ: a context holds at most this many sequences, so an engine at most this many slots. */
export const MAX_PARALLEL = 256;
const PARALLEL_EXPECTATION = `expected a whole number of requests served at once, from 1 to ${MAX_PARALLEL} (llama.cpp's most slots)`;
const QUEUE_LIMIT_EXPECTATION = 'expected a whole number of requests that may wait, 0 or more';

function strict<T extends z.core.$ZodLooseShape>(shape: T) {
  const known = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}; expected one of: ${known}`
        : 'expected a mapping (key: value lines)',
  });
}

/** A field whose text is parsed by one of the unit parsers; the parser's failure is the issue. */
function parsed(parse: (value: unknown) => number | undefined, expectation: string) {
  return z.unknown().transform((value, ctx) => {
    const result = parse(value);
    if (result === undefined) {
      ctx.addIssue({ code: 'custom', message: expectation });
      return z.NEVER;
    }
    return result;
  });
}

const nonEmptyText = (expected: string) => z.string({ error: expected }).trim().min(1, { error: expected });
const integer = (expected: string, min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.number({ error: expected }).int({ error: expected }).min(min, { error: expected }).max(max, { error: expected });
/** Ids and aliases are what clients put in `model`: no whitespace, so they survive a URL and a shell. */
const modelName = (what: string) =>
  z.string({ error: `expected ${what} (text without spaces)` }).regex(/^\S+$/, { error: `expected ${what} (text without spaces)` });

const UNIFIED_SHARE_EXPECTATION = 'expected a share of RAM above 0 and at most 1 (e.g. 0.75)';
const GPU_LAYERS_EXPECTATION = 'expected "all" or a whole number of layers (0 or more)';
const gpuLayers = z.union([z.literal('all'), integer(GPU_LAYERS_EXPECTATION, 0)], { error: GPU_LAYERS_EXPECTATION });
/** `parallel` and `queueLimit`: on a model, and their defaults under `engines:` (contracts' ModelLimits). */
const parallel = integer(PARALLEL_EXPECTATION, 1, MAX_PARALLEL).optional();
const queueLimit = integer(QUEUE_LIMIT_EXPECTATION, 0).optional();

const argumentList = z.array(z.string({ error: 'expected text (one argument per list item)' }), { error: 'expected a list of arguments' });

export const modelConfigSchema = strict({
  id: modelName('a model id'),
  path: nonEmptyText('expected the path of a .gguf file'),
  ctx: integer('expected a positive integer (context tokens)', 1).optional(),
  priority: integer('expected a whole number (higher is kept first)', Number.MIN_SAFE_INTEGER).default(0),
  pinned: z.boolean({ error: 'expected true or false' }).default(false),
  draft: modelName("another model's id").optional(),
  fallback: modelName("another model's id").optional(),
  gpuLayers: gpuLayers.default('all'),
  mixedSplit: z.boolean({ error: 'expected true or false' }).default(false),
  embeddings: z.boolean({ error: 'expected true or false' }).optional(),
  repack: z.boolean({ error: 'expected true or false' }).default(true),
  idleTtl: parsed(parseDuration, DURATION_EXPECTATION).optional(),
  hangLimit: parsed(parseDuration, DURATION_EXPECTATION).optional(),
  parallel,
  queueLimit,
  aliases: z.array(modelName('an alias'), { error: 'expected a list of names' }).default([]),
  engine: z.enum(ENGINE_CHOICES as [EngineChoice, ...EngineChoice[]], { error: `expected one of: ${ENGINE_CHOICES.join(', ')}` }).default('auto'),
  args: argumentList.default([]),
  // Arguments for one engine only, after `args`: a llama-server flag the embedded engine refuses
  // (`--logit-bias`) goes here, so the model still launches when `auto` picks the other engine.
  engineArgs: strict({ embedded: argumentList.optional(), 'llama-server': argumentList.optional() }).default({}),
  env: z.record(z.string(), z.string({ error: 'expected text (quote numbers: "0")' }), { error: 'expected a mapping of NAME: value' }).default({}),
});

/** Shorter keys are guessable over a LAN's round trips; 16 random characters are not. */
export const MIN_CLIENT_KEY_LENGTH = 16;
const CLIENT_KEY_EXPECTATION = `expected a secret of at least ${MIN_CLIENT_KEY_LENGTH} characters, e.g. from \`openssl rand -hex 24\``;
/** A name in a Host header: a DNS name or an IPv4 address (no port, no scheme), or an IPv6 address in brackets. */
const HOST_NAME = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])$/i;
const HOST_EXPECTATION = 'expected a host name as clients type it (workstation.lan, 192.168.1.20, [fe80::1]), without a port or scheme';
const ORIGIN_EXPECTATION = 'expected an origin as a browser sends it (scheme://host[:port], no path), or "*" for any';

export const listenSchema = strict({
  host: nonEmptyText('expected a host name or address').default(DEFAULT_LISTEN.host),
  port: integer('expected a port number from 1 to 65535', 1, 65535).default(DEFAULT_LISTEN.port),
  // Who may use /v1: every request must carry one of these keys once there is one (required
  // when `host` is not loopback). One per app, named, so that one can be revoked alone.
  clientKeys: z
    .array(
      strict({
        name: modelName('a name for the app that uses the key'),
        key: z.string({ error: CLIENT_KEY_EXPECTATION }).min(MIN_CLIENT_KEY_LENGTH, { error: CLIENT_KEY_EXPECTATION }),
      }),
      { error: 'expected a list of { name, key }' },
    )
    .default([]),
  // Names clients reach this machine by, besides loopback and the address they connect to.
  allowedHosts: z.array(z.string({ error: HOST_EXPECTATION }).regex(HOST_NAME, { error: HOST_EXPECTATION }), { error: 'expected a list of host names' }).default([]),
  // Web pages (by origin) that may call /v1 from a browser.
  corsOrigins: z.array(z.string({ error: ORIGIN_EXPECTATION }).refine(isOrigin, { error: ORIGIN_EXPECTATION }), { error: 'expected a list of origins' }).default([]),
  // Also listen on 127.0.0.1 at this port (Ollama's is 11434) when it is free, for apps with
  // Ollama's address built in; the same endpoint as `port`. Unset: no second port.
  ollamaPort: integer("expected a port number from 1 to 65535 (Ollama's own is 11434)", 1, 65535).optional(),
  // The admin API, /metrics and the dashboard: on loopback connections only, or on the network too.
  admin: z.enum(['loopback', 'network'], { error: 'expected loopback (the default) or network' }).default('loopback'),
});

export const configSchema = strict({
  listen: listenSchema.prefault({}),
  budget: strict({
    reserve: parsed(parseSize, SIZE_EXPECTATION).optional(),
    limit: parsed(parseSize, SIZE_EXPECTATION).optional(),
    // What each engine process holds on a GPU before any model; absent: measured (see runtime-overhead.ts).
    engineOverhead: parsed(parseSize, SIZE_EXPECTATION).optional(),
    // Apple Silicon: the share of RAM the GPU may use; macOS caps what it lets the GPU wire.
    unifiedShare: z
      .number({ error: UNIFIED_SHARE_EXPECTATION })
      .gt(0, { error: UNIFIED_SHARE_EXPECTATION })
      .lte(1, { error: UNIFIED_SHARE_EXPECTATION })
      .optional(),
    // How often the GPUs' memory is read while no model of ours runs or loads (default 10s, at
    // least 1s): while idle, the picture of what other programs hold lags this much.
    idleSample: parsed(parseDuration, DURATION_EXPECTATION)
      .refine((ms) => ms >= 1000, { error: 'expected a duration of at least 1s' })
      .optional(),
  }).default({}),
  modelDirs: z.array(nonEmptyText('expected a folder path'), { error: 'expected a list of folders' }).optional(),
  engines: strict({
    llamaServer: nonEmptyText('expected the path of a llama-server executable').optional(),
    warmSpare: z.boolean({ error: 'expected true or false' }).default(true),
    // Keep conversations across evictions (core/engine/saved-conversations); false: none saved or restored.
    savedConversations: z.boolean({ error: 'expected true or false' }).default(true),
    // Only conversations longer than this many tokens are kept (a short one costs little to evaluate again).
    savedConversationsMinTokens: z.number({ error: TOKEN_COUNT_EXPECTATION }).int({ error: TOKEN_COUNT_EXPECTATION }).min(0, { error: TOKEN_COUNT_EXPECTATION }).optional(),
    // What the kept conversations may take on disk together, least recently used dropped first.
    savedConversationsDisk: parsed(parseSize, SIZE_EXPECTATION).optional(),
    // How long a relaunched server of a failing model must stay ready to count as healthy when it answers nothing meanwhile.
    healthyAfter: parsed(parseDuration, DURATION_EXPECTATION).optional(),
    // Every model's `parallel` and `queueLimit` where its own entry sets none (discovered models too).
    parallel,
    queueLimit,
  }).default({ warmSpare: true, savedConversations: true }),
  // What the daemon keeps of the requests it served (core/demand/request-log.ts): the newest
  // `keep` records, and the first `keepBodies` bytes of each one's request and answer (none unless set).
  activity: strict({
    keep: integer('expected a whole number of requests, at least 1', 1, 1_000_000).default(DEFAULT_ACTIVITY_KEEP),
    keepBodies: parsed(parseSize, SIZE_EXPECTATION).optional(),
  }).default({ keep: DEFAULT_ACTIVITY_KEEP }),
  activationWait: parsed(parseDuration, DURATION_EXPECTATION).optional(),
  swapTurn: parsed(parseDuration, DURATION_EXPECTATION).optional(),
  deletedConfigGrace: parsed(parseDuration, DURATION_EXPECTATION).optional(),
  models: z.array(modelConfigSchema, { error: 'expected a list of models' }).default([]),
});

function isOrigin(text: string): boolean {
  if (text === '*') return true;
  try {
    return new URL(text).origin === text;
  } catch {
    return false;
  }
}

export type RawModelConfig = z.output<typeof modelConfigSchema>;
export type RawConfig = z.output<typeof configSchema>;
