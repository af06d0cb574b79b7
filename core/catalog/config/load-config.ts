// Reads config.yaml into a typed, path-resolved config, or into the list of everything wrong
// with it. Never throws for a problem in the file: a bad file is a value the ConfigStore
// reports while the last good config keeps running.
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseDocument } from 'yaml';
import { defaultModelDirs, resolveUserPath, type PlatformFacts } from '../paths.js';
import { configError, fieldPath, valueAt } from './config-errors.js';
import {
  configSchema,
  DEFAULT_ACTIVATION_WAIT_MS,
  DEFAULT_HANG_LIMIT_MS,
  DEFAULT_IDLE_TTL_MS,
  DEFAULT_SWAP_TURN_MS,
  DEFAULT_RESERVE_BYTES,
  type EngineChoice,
  type GpuLayers,
  type RawConfig,
} from './schema.js';

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
  idleTtlMs: number;
  hangLimitMs: number;
  aliases: string[];
  engine: EngineChoice;
  args: string[];
  env: Record<string, string>;
  /** Position in the file's `models` list, so later checks can name `models[i]`. */
  index: number;
}

export interface LlmtrayConfig {
  /** The file this came from (whether or not it exists), for error messages. */
  file: string;
  listen: { host: string; port: number };
  budget: { reserveBytes: number; limitBytes?: number; unifiedShare?: number; engineOverheadBytes?: number };
  /** Absolute folders to discover GGUF files in: the configured list, else the defaults. */
  modelDirs: string[];
  llamaServerPath?: string;
  activationWaitMs: number;
  swapTurnMs: number;
  models: ModelConfig[];
}

export type ConfigLoad = { ok: true; config: LlmtrayConfig } | { ok: false; errors: string[] };

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
    if (code === 'ENOENT') return { ok: true, config: defaultConfig(file, facts) };
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
  const raw: unknown = doc.toJS() ?? {};
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    return {
      ok: false,
      errors: result.error.issues.map((issue) =>
        issue.code === 'unrecognized_keys'
          ? `${file}: ${fieldPath(issue.path)}: ${issue.message}`
          : configError(file, issue.path, issue.message, valueAt(raw, issue.path)),
      ),
    };
  }
  const errors = duplicateNameErrors(result.data, file);
  return errors.length > 0 ? { ok: false, errors } : { ok: true, config: toConfig(result.data, file, facts) };
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

function toConfig(raw: RawConfig, file: string, facts: PlatformFacts): LlmtrayConfig {
  const base = dirname(file);
  const userPath = (path: string) => resolveUserPath(path, base, facts.homeDir);
  return {
    file,
    listen: raw.listen,
    budget: {
      reserveBytes: raw.budget.reserve ?? DEFAULT_RESERVE_BYTES,
      ...(raw.budget.limit !== undefined ? { limitBytes: raw.budget.limit } : {}),
      ...(raw.budget.unifiedShare !== undefined ? { unifiedShare: raw.budget.unifiedShare } : {}),
      ...(raw.budget.engineOverhead !== undefined ? { engineOverheadBytes: raw.budget.engineOverhead } : {}),
    },
    modelDirs: raw.modelDirs ? raw.modelDirs.map(userPath) : defaultModelDirs(facts),
    ...(raw.engines.llamaServer ? { llamaServerPath: userPath(raw.engines.llamaServer) } : {}),
    activationWaitMs: raw.activationWait ?? DEFAULT_ACTIVATION_WAIT_MS,
    swapTurnMs: raw.swapTurn ?? DEFAULT_SWAP_TURN_MS,
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
      idleTtlMs: model.idleTtl ?? DEFAULT_IDLE_TTL_MS,
      hangLimitMs: model.hangLimit ?? DEFAULT_HANG_LIMIT_MS,
      aliases: model.aliases,
      engine: model.engine,
      args: model.args,
      env: model.env,
      index,
    })),
  };
}
