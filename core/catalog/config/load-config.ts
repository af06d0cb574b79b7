// Reads config.yaml into a typed, path-resolved config, or into the list of everything wrong
// with it. Never throws for a problem in the file: a bad file is a value the ConfigStore
// reports while the last good config keeps running.
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseDocument } from 'yaml';
import { defaultModelDirs, resolveUserPath, type PlatformFacts } from '../paths.js';
import { configError, describeValue, fieldPath, valueAt } from './config-errors.js';
import { unknownFieldError } from './unknown-fields.js';
import {
  configSchema,
  DEFAULT_ACTIVATION_WAIT_MS,
  DEFAULT_HANG_LIMIT_MS,
  DEFAULT_IDLE_TTL_MS,
  DEFAULT_SWAP_TURN_MS,
  DEFAULT_DELETED_CONFIG_GRACE_MS,
  DEFAULT_RESERVE_BYTES,
  type EngineArgs,
  type EngineChoice,
  type GpuLayers,
  type RawConfig,
} from './schema.js';
import type { ModelLimits } from '../../contracts/snapshot.js';

export interface ModelConfig {
  id: string;
  /** Absolute: `~` expanded, relative paths taken from the config file's folder. */
  path: string;
  /** Context tokens; absent means "the model's trained context, capped" (see catalog.ts). */
  ctx?: number;
  priority: number;
  pinned: boolean;
  draft?: string;
  fallback?: string;
  gpuLayers: GpuLayers;
  /** May be split across GPUs of different classes. */
  mixedSplit: boolean;
  /** Serves /v1/embeddings (llama-server is started with --embeddings), whatever its GGUF says. */
  embeddings?: true;
  /** false: the CPU's extra weight buffers turned off (llama-server's --no-repack). */
  repack: boolean;
  idleTtlMs: number;
  hangLimitMs: number;
  /** `parallel` and `queueLimit`: its own, else the defaults under `engines:`, each field alone. */
  limits: ModelLimits;
  aliases: string[];
  engine: EngineChoice;
  /** Appended to whichever engine runs the model. */
  args: string[];
  /** Appended after `args` when that engine runs the model; an engine not named gets none. */
  engineArgs: EngineArgs;
  env: Record<string, string>;
  /** Position in the file's `models` list, so later checks can name `models[i]`. */
  index: number;
}

/** One app's key for /v1; `name` says whose it is, so it can be revoked alone. */
export interface ClientKeyConfig {
  name: string;
  key: string;
}

export interface ListenConfig {
  host: string;
  port: number;
  clientKeys: ClientKeyConfig[];
  /** Host names served besides loopback ones and the address a request arrived on, lower case. */
  allowedHosts: string[];
  corsOrigins: string[];
  /** Where the admin API, /metrics and the dashboard answer: loopback connections only, or the network too. */
  admin: 'loopback' | 'network';
  /** A second loopback port for apps with Ollama's address built in (11434), taken at start when free; absent: none. */
  ollamaPort?: number;
}

export interface LlmtrayConfig {
  /** The file this came from (whether or not it exists), for error messages. */
  file: string;
  listen: ListenConfig;
  budget: { reserveBytes: number; limitBytes?: number; unifiedShare?: number; engineOverheadBytes?: number; idleSampleMs?: number };
  /** Absolute folders to discover GGUF files in: the configured list, else the defaults. */
  modelDirs: string[];
  llamaServerPath?: string;
  /** Keep a warm spare embedded engine for the next launch (core/engine/supervisor/warm-spare.ts). */
  warmSpare: boolean;
  /** `engines.savedConversations`: keep conversations across evictions (core/engine/saved-conversations). */
  savedConversations: boolean;
  /** `engines.savedConversationsMinTokens`; absent: the engines' default (256). */
  savedConversationsMinTokens?: number;
  /** `engines.savedConversationsDisk`, bytes; absent: the engines' default (4 GiB). */
  savedConversationsBudgetBytes?: number;
  /** `engines.healthyAfter`: a failing model's relaunched server is healthy after this long ready; absent: the controller's default. */
  healthyAfterMs?: number;
  /** `engines.parallel` and `engines.queueLimit`: the limits of a model whose entry sets none, and of every discovered model. */
  defaultLimits: ModelLimits;
  /** `activity`: how many served requests are kept, and how many bytes of each one's bodies (0: none). */
  activity: { keep: number; keepBodiesBytes: number };
  activationWaitMs: number;
  swapTurnMs: number;
  /** `deletedConfigGrace`: how long this config stays in force once its file is deleted (ConfigStore). */
  deletedConfigGraceMs: number;
  models: ModelConfig[];
}

/** `fromFile` false: the file is absent and the config is the defaults, which is not an error. */
export type ConfigLoad = { ok: true; config: LlmtrayConfig; fromFile: boolean } | { ok: false; errors: string[] };

/** The config of an absent file: defaults and discovery only. */
export function defaultConfig(file: string, facts: PlatformFacts): LlmtrayConfig {
  const parsed = configSchema.parse({});
  return toConfig(parsed, file, facts);
}

/**
 * Reads and validates `file`. Blocks on one file read. An absent file is not an error (a new
 * install has none); an unreadable one is, naming the OS reason.
 */
export async function loadConfigFile(file: string, facts: PlatformFacts): Promise<ConfigLoad> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { ok: true, config: defaultConfig(file, facts), fromFile: false };
    return { ok: false, errors: [`${file}: cannot read the config file: ${(error as Error).message}`] };
  }
  return parseConfigText(text, file, facts);
}

/** Validates config text as if it were in `file` (whose folder anchors relative paths). Pure apart from `facts`. */
export function parseConfigText(text: string, file: string, facts: PlatformFacts): ConfigLoad {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.map((error) => {
        const at = error.linePos?.[0];
        // The library appends " at line L, column C:" and a code excerpt; the prefix says where.
        const reason = (error.message.split('\n')[0] ?? error.message).replace(/ at line \d+, column \d+:?$/, '');
        return `${file}${at ? `:${at.line}:${at.col}` : ''}: YAML syntax error: ${reason}`;
      }),
    };
  }
  let raw: unknown;
  try {
    raw = doc.toJS() ?? {};
  } catch (error) {
    // The parser refuses what it cannot turn into values without exhausting memory (an alias
    // expanding into millions of nodes): a bad file like any other, not a crash.
    return { ok: false, errors: [`${file}: YAML cannot be read: ${(error as Error).message}`] };
  }
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    return {
      ok: false,
      // One sentence per misspelt field, each naming its own path and value.
      errors: result.error.issues.flatMap((issue) =>
        issue.code === 'unrecognized_keys'
          ? issue.keys.map((key) => unknownFieldError(file, issue.path, key, valueAt(raw, [...issue.path, key]), !isUnderClientKeys(issue.path)))
          : isClientKeySecret(issue.path)
            ? [`${file}: ${fieldPath(issue.path)}: ${issue.message}, got a secret that is not shown here`]
            : [configError(file, issue.path, issue.message, valueAt(raw, issue.path))],
      ),
    };
  }
  const errors = [...clientKeyErrors(result.data, file), ...duplicateNameErrors(result.data, file), ...turnErrors(result.data, raw, file)];
  return errors.length > 0 ? { ok: false, errors } : { ok: true, config: toConfig(result.data, file, facts), fromFile: true };
}

/** Config errors are logged and shown on the dashboard: a client key's text never is, even a bad one. */
function isClientKeySecret(path: readonly PropertyKey[]): boolean {
  return path[0] === 'listen' && path[1] === 'clientKeys' && path[3] === 'key';
}

/** Inside a client key's entry, a misspelt `key:` holds the secret: its value is not shown either. */
function isUnderClientKeys(path: readonly PropertyKey[]): boolean {
  return path[0] === 'listen' && path[1] === 'clientKeys';
}

/**
 * Client key names and keys are each unique, so revoking one app's key revokes exactly that
 * app. (Whether a key is needed at all depends on the address the daemon listens on, which
 * `--host` can override: core/daemon/listen-plan.ts decides that at start.)
 */
function clientKeyErrors(raw: RawConfig, file: string): string[] {
  const { clientKeys } = raw.listen;
  const errors: string[] = [];
  const seenNames = new Map<string, number>();
  const seenKeys = new Map<string, number>();
  clientKeys.forEach(({ name, key }, i) => {
    const named = seenNames.get(name);
    if (named !== undefined) errors.push(configError(file, ['listen', 'clientKeys', i, 'name'], 'expected a name no other key has', name, `listen.clientKeys[${named}] has it`));
    else seenNames.set(name, i);
    const same = seenKeys.get(key);
    // The key itself stays out of the message: errors are logged and shown on the dashboard.
    if (same !== undefined) errors.push(`${file}: listen.clientKeys[${i}].key: expected a key no other app has (listen.clientKeys[${same}] has the same one), so each can be revoked alone`);
    else seenKeys.set(key, i);
  });
  return errors;
}

/**
 * Ids and aliases share one namespace (a request's `model` may be either), compared without
 * case because `resolve` is case-insensitive: "Qwen" and "qwen" would otherwise route at random.
 */
function duplicateNameErrors(raw: RawConfig, file: string): string[] {
  const errors: string[] = [];
  const owner = new Map<string, string>();
  const claim = (name: string, path: (string | number)[], holder: string) => {
    const key = name.toLowerCase();
    const previous = owner.get(key);
    if (previous === undefined) owner.set(key, holder);
    else errors.push(configError(file, path, 'expected a name no other model uses', name, `already used by ${previous}`));
  };
  raw.models.forEach((model, i) => claim(model.id, ['models', i, 'id'], `models[${i}].id`));
  raw.models.forEach((model, i) =>
    model.aliases.forEach((alias, j) => claim(alias, ['models', i, 'aliases', j], `models[${i}].aliases[${j}]`)),
  );
  return errors;
}

/**
 * A request kept out by a busy model waits up to `swapTurn` for that model's turn to end, within
 * its own bound, `activationWait` (core/router/README.md, "Waiting for room, and turns"). A turn
 * as long as the bound or longer would answer such a request 503 every time before its turn
 * came. Defaults count: a short activationWait against the default turn is as wrong as a long
 * turn. The error goes on the field the file sets (swapTurn when both are), naming the other.
 */
function turnErrors(config: RawConfig, raw: unknown, file: string): string[] {
  const waitMs = config.activationWait ?? DEFAULT_ACTIVATION_WAIT_MS;
  const turnMs = config.swapTurn ?? DEFAULT_SWAP_TURN_MS;
  if (turnMs < waitMs) return [];
  const why = "so that a request waiting behind a busy model gets its model's turn before it times out";
  if (config.swapTurn !== undefined) {
    const wait = config.activationWait === undefined ? `${DEFAULT_ACTIVATION_WAIT_MS / 1000}s, the default` : describeValue(valueAt(raw, ['activationWait']));
    return [configError(file, ['swapTurn'], `expected a turn shorter than activationWait (${wait}), ${why}`, valueAt(raw, ['swapTurn']))];
  }
  return [configError(file, ['activationWait'], `expected a wait longer than swapTurn (${DEFAULT_SWAP_TURN_MS / 1000}s, the default), ${why}`, valueAt(raw, ['activationWait']))];
}

function toConfig(raw: RawConfig, file: string, facts: PlatformFacts): LlmtrayConfig {
  const base = dirname(file);
  const userPath = (path: string) => resolveUserPath(path, base, facts.homeDir);
  return {
    file,
    listen: { ...raw.listen, allowedHosts: raw.listen.allowedHosts.map((name) => name.toLowerCase()) },
    budget: {
      reserveBytes: raw.budget.reserve ?? DEFAULT_RESERVE_BYTES,
      ...(raw.budget.limit !== undefined ? { limitBytes: raw.budget.limit } : {}),
      ...(raw.budget.unifiedShare !== undefined ? { unifiedShare: raw.budget.unifiedShare } : {}),
      ...(raw.budget.engineOverhead !== undefined ? { engineOverheadBytes: raw.budget.engineOverhead } : {}),
      ...(raw.budget.idleSample !== undefined ? { idleSampleMs: raw.budget.idleSample } : {}),
    },
    modelDirs: raw.modelDirs ? raw.modelDirs.map(userPath) : defaultModelDirs(facts),
    ...(raw.engines.llamaServer ? { llamaServerPath: userPath(raw.engines.llamaServer) } : {}),
    warmSpare: raw.engines.warmSpare,
    savedConversations: raw.engines.savedConversations,
    ...(raw.engines.savedConversationsMinTokens !== undefined ? { savedConversationsMinTokens: raw.engines.savedConversationsMinTokens } : {}),
    ...(raw.engines.savedConversationsDisk !== undefined ? { savedConversationsBudgetBytes: raw.engines.savedConversationsDisk } : {}),
    ...(raw.engines.healthyAfter !== undefined ? { healthyAfterMs: raw.engines.healthyAfter } : {}),
    defaultLimits: limitsOf(raw.engines, {}),
    activity: { keep: raw.activity.keep, keepBodiesBytes: raw.activity.keepBodies ?? 0 },
    activationWaitMs: raw.activationWait ?? DEFAULT_ACTIVATION_WAIT_MS,
    swapTurnMs: raw.swapTurn ?? DEFAULT_SWAP_TURN_MS,
    deletedConfigGraceMs: raw.deletedConfigGrace ?? DEFAULT_DELETED_CONFIG_GRACE_MS,
    models: raw.models.map((model, index) => ({
      id: model.id,
      path: userPath(model.path),
      ...(model.ctx !== undefined ? { ctx: model.ctx } : {}),
      priority: model.priority,
      pinned: model.pinned,
      ...(model.draft !== undefined ? { draft: model.draft } : {}),
      ...(model.fallback !== undefined ? { fallback: model.fallback } : {}),
      gpuLayers: model.gpuLayers,
      mixedSplit: model.mixedSplit,
      ...(model.embeddings === true ? { embeddings: true as const } : {}),
      repack: model.repack,
      idleTtlMs: model.idleTtl ?? DEFAULT_IDLE_TTL_MS,
      hangLimitMs: model.hangLimit ?? DEFAULT_HANG_LIMIT_MS,
      limits: limitsOf(model, raw.engines),
      aliases: model.aliases,
      engine: model.engine,
      args: model.args,
      engineArgs: model.engineArgs,
      env: model.env,
      index,
    })),
  };
}

/** The fields set in `own`, each else the one in `defaults`; a field neither sets stays absent (no limit). */
function limitsOf(own: ModelLimits, defaults: ModelLimits): ModelLimits {
  const parallel = own.parallel ?? defaults.parallel;
  const queueLimit = own.queueLimit ?? defaults.queueLimit;
  return { ...(parallel !== undefined ? { parallel } : {}), ...(queueLimit !== undefined ? { queueLimit } : {}) };
}
