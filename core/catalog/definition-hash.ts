// A model's definition hash: changes exactly when relaunching it could turn out differently.
//
// The controller keeps a quarantined model down until a person retries it or this hash
// changes (DESIGN.md, recover). So it covers what the person can change to fix a failure: the
// file (a re-download has a new size or mtime), the context, the launch arguments (each
// engine's too) and environment, the offload, the engine, the projector and the draft (including the draft's
// own file), the fallback and the slots (`parallel`: the engine's -np and its KV cache). It
// leaves out what cannot fix a failed launch: priority, aliases, pinning, idle TTL, queueLimit
// (llmtray's own count, never the engine's) — editing those must not release a quarantine.
import { createHash } from 'node:crypto';
import type { EngineArgs, EngineChoice, GpuLayers } from './config/schema.js';

export interface FileIdentity {
  path: string;
  sizeBytes: number;
  mtimeMs: number;
}

export interface ModelDefinition {
  file: FileIdentity;
  ctx: number;
  args: readonly string[];
  engineArgs: Readonly<EngineArgs>;
  env: Readonly<Record<string, string>>;
  gpuLayers: GpuLayers;
  engine: EngineChoice;
  projectorPath?: string;
  draft?: { id: string; file: FileIdentity; gpuLayers: GpuLayers };
  fallbackId?: string;
  /** Configured to serve embeddings (it changes the engine's argv: --embeddings). */
  embeddings?: boolean;
  /** `repack: false`: the CPU's extra weight buffers turned off (`--no-repack`). */
  noRepack?: boolean;
  /** Requests served at once: the engine's slots (`-np`) and a KV cache for each. */
  parallel?: number;
}

/** 16 hex digits of sha256 over a canonical JSON of the definition; pure and deterministic. */
export function definitionHash(definition: ModelDefinition): string {
  const canonical = JSON.stringify({
    file: [definition.file.path, definition.file.sizeBytes, definition.file.mtimeMs],
    ctx: definition.ctx,
    args: definition.args,
    env: sortedEntries(definition.env),
    gpuLayers: definition.gpuLayers,
    engine: definition.engine,
    projector: definition.projectorPath ?? null,
    draft: definition.draft
      ? [definition.draft.id, definition.draft.file.path, definition.draft.file.sizeBytes, definition.draft.file.mtimeMs, definition.draft.gpuLayers]
      : null,
    fallback: definition.fallbackId ?? null,
    // Only when set, so every hash from before the field (and its measurements) still holds.
    ...(definition.embeddings === true ? { embeddings: true } : {}),
    ...(definition.noRepack === true ? { noRepack: true } : {}),
    ...(Object.keys(definition.engineArgs).length > 0 ? { engineArgs: sortedEntries(definition.engineArgs) } : {}),
    ...(definition.parallel !== undefined ? { parallel: definition.parallel } : {}),
  });
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

/** A mapping's entries in key order, so that the order the file lists them in changes no hash. */
function sortedEntries<T>(mapping: Readonly<Record<string, T>>): [string, T][] {
  return Object.entries(mapping).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
