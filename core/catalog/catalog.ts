// The catalog: every model llmtray can serve, with what it costs. The daemon's one view of
// config + discovery + metadata + estimates.
//
//   config.yaml ──ConfigStore──┐
//   model dirs ──discovery─────┼─► assemble ─► CatalogModel[] ─► controller, router, admin
//   GGUF headers ─metadata─────┤     (ids, references, estimates, definition hashes)
//   measurements.json ─────────┘
//
// A model that cannot be read, estimated or launched as configured is still listed, with
// `metadataError` saying why, so the controller quarantines it with that reason instead of the
// model silently missing from the tray.
import { join } from 'node:path';
import type { FootprintEstimate } from '../policy/levels.js';
import { SerialQueue } from '../common/serial-queue.js';
import { findModelByName } from '../contracts/model-names.js';
import type { EngineKind, ModelLimits } from '../contracts/snapshot.js';
import { ConfigStore, type ConfigInForce, type ReloadResult } from './config/config-store.js';
import type { LlmtrayConfig } from './config/load-config.js';
import { DEFAULT_HANG_LIMIT_MS, DEFAULT_IDLE_TTL_MS, type EngineArgs, type EngineChoice, type GpuLayers } from './config/schema.js';
import { definitionHash, type FileIdentity } from './definition-hash.js';
import { discoverModels, projectorBeside } from './discovery.js';
import { withCpuBufferPrior } from './cpu-buffer-prior.js';
import { totalMatrixBytes, type CpuBufferRatios } from './cpu-buffers.js';
import { engineContextTokens, estimateFootprint, type LogitsShape } from './footprint.js';
import { cachedMetadataReader, type GgufFacts, type MetadataReader, type MetadataResult } from './gguf-metadata.js';
import { MEASUREMENTS_FILE_NAME, MeasurementStore, withMeasurement } from './measurements.js';
import { MODEL_IDS_FILE_NAME, ModelIdStore } from './model-id-store.js';
import { assignUniqueIds } from './model-ids.js';
import { currentPlatform, type PlatformFacts } from './paths.js';
import { referenceProblems, type ReferenceProblem } from './references.js';
import { Settling } from './settling.js';
import { filesBeingWritten, type FileBeingWritten } from './being-written.js';
import { fileIdentity, projectorFromArgs } from './configured-files.js';
import { Emitter, type Event } from '../common/emitter.js';

export type ModelSource = 'config' | 'discovered';

export interface CatalogModel {
  id: string;
  aliases: string[];
  /** The first (or only) part; symlinks kept. */
  path: string;
  /** All parts together, bytes (0 when the file cannot be read). */
  sizeBytes: number;
  /** Context tokens each request gets at the 'full' level; the engine holds it for each of its slots (engineContextTokens). */
  ctx: number;
  /** `parallel` and `queueLimit`, its own or the config's defaults under `engines:`. */
  limits: ModelLimits;
  priority: number;
  pinnedByDefault: boolean;
  draftId?: string;
  fallbackId?: string;
  gpuLayers: GpuLayers;
  /** May be split across GPUs of different classes (slower; not every build handles it well). */
  mixedSplit: boolean;
  idleTtlMs: number;
  /** No progress this long with requests in flight: hung, killed, and the ladder climbs 'hang'. */
  hangLimitMs: number;
  engine: EngineChoice;
  args: string[];
  /** The config's `engineArgs`: appended after `args` for the engine that runs the model (launch-specs.ts). */
  engineArgs: EngineArgs;
  env: Record<string, string>;
  projectorPath?: string;
  /**
   * An embedding model (its GGUF names a pooling, or the config says `embeddings: true`):
   * launched to serve /v1/embeddings. `modelPools`: the GGUF says how to pool its tokens into
   * one vector; otherwise the engine is told to average them (a chat model marked to embed).
   */
  embeddings?: { modelPools: boolean };
  /**
   * Whether llama.cpp may copy the weights into the CPU's extra buffers (AMX, CPU_REPACK) where
   * they run on the CPU; `repack: false` in the config turns it off (`--no-repack`).
   */
  repack: boolean;
  /**
   * Its matrices' bytes by ggml type number, all of them: what a load wholly on the CPU may put
   * in extra buffers, and what the CPU's ratios are learned against (cpu-buffers.ts). Null when
   * the header is not read.
   */
  cpuMatrixBytes: Record<string, number> | null;
  /** Device memory at the 'full' level, draft included; null when it cannot be estimated (see metadataError). */
  estimate: FootprintEstimate | null;
  /** Why this model cannot be launched as defined, as a sentence naming the file; null when it can. */
  metadataError: string | null;
  definitionHash: string;
  source: ModelSource;
}

/**
 * Context for models that configure none: the trained context, capped. Trained contexts of
 * 128k tokens and more are common now, and their KV cache alone outgrows most GPUs; the person
 * raises `ctx` where they need it.
 */
export const DEFAULT_CONTEXT_CAP = 8192;
/** When not even the header says: llama-server's own default. */
const UNKNOWN_CONTEXT = 4096;

export interface CatalogOptions {
  configPath: string;
  /** Folder for measurements.json. */
  dataDir: string;
  facts?: PlatformFacts;
  /** Injected in tests; defaults to our GGUF header reader (gguf-metadata.ts) behind a (path, size, mtime) cache. */
  readMetadata?: MetadataReader;
  now?: () => number;
  /** How long a discovered file's size must hold before it is listed, ms (settling.ts's SETTLE_MS by default). */
  settleMs?: number;
  /**
   * The share of each matrix type the model's engine puts in the CPU's extra buffers on this
   * machine, as learned so far (cpu-buffers.ts); default: none known.
   */
  cpuBufferRatios?: (model: { engine: EngineChoice }) => CpuBufferRatios;
  /**
   * What this CPU's flags say those shares are at most (cpu-buffer-prior.ts), priced for the
   * types no load has taught yet; default: none.
   */
  cpuBufferPrior?: CpuBufferRatios;
  /**
   * The engine that runs a model here (launch-specs.ts's engineFor): its compute buffer is priced
   * for it (footprint.ts's logitsRows). Default: llama-server only for `engine: llama-server`,
   * so `auto` is priced for the embedded engine, as it runs where no llama-server is found; where
   * one is, that overstates by the logits the embedded engine reserves and llama-server does not
   * (~250 MiB on a 150 k vocabulary), the safe side until the caller says which engine it found.
   */
  engineOf?: (model: { engine: EngineChoice }) => EngineKind;
}

interface Assembly {
  models: CatalogModel[];
  references: ReferenceProblem[];
  problems: string[];
  /** When to rescan for discovered files still being written, ms after the scan; null when none is. */
  settleRecheckInMs: number | null;
  /** Each discovered model's resolved file → its id, for the id store. */
  discoveredIds: Map<string, string>;
  beingWritten: FileBeingWritten[];
}

/** A model while the catalog assembles it: the fields it keeps as they are, and what it still works out. */
interface Entry
  extends Pick<
    CatalogModel,
    'id' | 'aliases' | 'path' | 'priority' | 'draftId' | 'fallbackId' | 'gpuLayers' | 'mixedSplit' | 'idleTtlMs' | 'hangLimitMs' | 'limits' | 'engine' | 'args' | 'engineArgs' | 'env' | 'projectorPath' | 'embeddings' | 'repack' | 'source'
  > {
  file: FileIdentity | null;
  realPath: string | null;
  fileError: string | null;
  configuredCtx?: number;
  pinned: boolean;
  configIndex?: number;
}

export class Catalog {
  private assembly: Assembly = { models: [], references: [], problems: [], settleRecheckInMs: null, discoveredIds: new Map(), beingWritten: [] };
  private lastChecked: { config: LlmtrayConfig; assembly: Assembly } | undefined;
  private readonly changes = new Emitter<readonly CatalogModel[]>('the catalog');
  private readonly store: ConfigStore;
  private readonly readMetadata: MetadataReader;
  private readonly cpuBufferRatios: NonNullable<CatalogOptions['cpuBufferRatios']>;
  private readonly cpuBufferPrior: CpuBufferRatios;
  private readonly engineOf: NonNullable<CatalogOptions['engineOf']>;
  private readonly reloads = new SerialQueue();
  private readonly settling: Settling;

  private constructor(
    options: CatalogOptions,
    private readonly measurements: MeasurementStore,
    private readonly ids: ModelIdStore,
  ) {
    this.readMetadata = options.readMetadata ?? cachedMetadataReader();
    this.settling = new Settling(options.settleMs === undefined ? {} : { settleMs: options.settleMs });
    this.cpuBufferRatios = options.cpuBufferRatios ?? (() => ({}));
    this.cpuBufferPrior = options.cpuBufferPrior ?? {};
    this.engineOf = options.engineOf ?? ((model) => (model.engine === 'llama-server' ? 'llama-server' : 'embedded'));
    this.store = new ConfigStore({
      file: options.configPath,
      facts: options.facts ?? currentPlatform(),
      check: async (candidate) => {
        const assembly = await this.assemble(candidate);
        this.lastChecked = { config: candidate, assembly };
        return assembly.references.map((r) => r.message);
      },
    });
  }

  /** Opens the catalog and loads it once (see reload). Blocks on disk reads; never rejects for a bad config or model. */
  static async open(options: CatalogOptions): Promise<Catalog> {
    const measurements = await MeasurementStore.open(join(options.dataDir, MEASUREMENTS_FILE_NAME), options.now);
    const ids = await ModelIdStore.open(join(options.dataDir, MODEL_IDS_FILE_NAME));
    const catalog = new Catalog(options, measurements, ids);
    await catalog.reload();
    return catalog;
  }

  /** Every model, configured ones first in file order, then discovered ones by id. Non-blocking. */
  models(): readonly CatalogModel[] {
    return this.assembly.models;
  }

  /** The model a request's `model` names: an id or alias, exact first, then ignoring case. Non-blocking. */
  resolve(nameOrAlias: string): CatalogModel | undefined {
    return findModelByName(this.assembly.models, nameOrAlias);
  }

  /** The config in force (the last good one). Non-blocking. */
  config(): LlmtrayConfig {
    return this.store.current();
  }

  /**
   * A discovered file still being written is not listed (settling.ts); nothing on disk says when
   * it stops, so a reload this many ms from now lists it if it has. Null when none is growing.
   * Non-blocking.
   */
  settleRecheckInMs(): number | null {
    return this.assembly.settleRecheckInMs;
  }

  /**
   * The discovered file still being written that `name` will mean once it settles (by the id it
   * will get), for a request that must hear so rather than "does not exist". Non-blocking.
   */
  beingWritten(name: string): FileBeingWritten | undefined {
    return findModelByName(this.assembly.beingWritten, name);
  }

  /** Whether the config in force is the file's last good content or the defaults (see ConfigStore.inForce). Non-blocking. */
  configInForce(): ConfigInForce {
    return this.store.inForce();
  }

  /** Why the config file's last reload was not applied (file, field, value); empty after a good one. Non-blocking. */
  configErrors(): readonly string[] {
    return this.store.errors();
  }

  /** Config errors of the last reload, then discovery's notes (unreadable folders, incomplete splits). Non-blocking. */
  problems(): string[] {
    return [...this.store.errors(), ...this.assembly.problems];
  }

  /**
   * Re-reads the config and rescans the model dirs. A config that fails any check is not taken
   * (the last good one stays, the result says why), but the rescan still happens, so new
   * downloads appear either way. Emits CatalogChanged when the model list differs. Blocks on
   * disk reads; serialised; never rejects.
   */
  reload(): Promise<ReloadResult> {
    return this.reloads.run(async () => {
      const result = await this.store.reload();
      const config = this.store.current();
      const checked = this.lastChecked;
      this.lastChecked = undefined;
      let assembly: Assembly;
      try {
        assembly = result.ok && checked?.config === config ? checked.assembly : await this.assemble(config);
      } catch (error) {
        // The rescan itself failed (a folder vanished mid-walk, a reader bug): the models stay as
        // they were, and the next change tries again.
        const problem = `${config.file}: the models could not be rescanned, the last list stays: ${(error as Error).message}`;
        return { ok: false, errors: result.ok ? [problem] : [...result.errors, problem] };
      }
      this.publish(withReferenceErrors(assembly));
      // A failed write keeps the ids in memory for this run; the next reload writes them again.
      await this.ids.record(assembly.discoveredIds).catch(() => undefined);
      return result;
    });
  }

  /** Fires with the models each time the list changes (CatalogChanged). */
  readonly onDidChange: Event<readonly CatalogModel[]> = this.changes.event;

  /**
   * Remembers what a running model really took on the device (the whole process: model, draft,
   * projector, at the 'full' level): its estimate becomes at least that, now and after
   * restarts, until its definition changes. Resolves once persisted; rejects for an unknown id
   * or when the file cannot be written (the in-memory estimate is raised regardless).
   */
  async learnFromMeasurement(modelId: string, measuredBytes: number): Promise<void> {
    const model = this.assembly.models.find((m) => m.id === modelId);
    if (!model) throw new Error(`Cannot learn a measurement for "${modelId}": no such model in the catalog`);
    const written = this.measurements.record(modelId, model.definitionHash, measuredBytes);
    const learned = this.measurements.measuredBytes(modelId, model.definitionHash);
    if (model.estimate) {
      const raised = withMeasurement(model.estimate, learned);
      if (raised !== model.estimate) {
        this.publish({ ...this.assembly, models: this.assembly.models.map((m) => (m === model ? { ...m, estimate: raised } : m)) });
      }
    }
    await written;
  }

  private publish(next: Assembly): void {
    const changed = JSON.stringify(next.models) !== JSON.stringify(this.assembly.models);
    this.assembly = next;
    if (!changed) return;
    this.changes.fire(next.models);
  }

  private async assemble(config: LlmtrayConfig): Promise<Assembly> {
    const discovery = await discoverModels(config.modelDirs);
    const { settled, growing, standingIn, recheckInMs } = this.settling.check(discovery.files);
    const configured = await Promise.all(config.models.map(async (model): Promise<Entry> => {
      const identity = await fileIdentity(model.path);
      const fromArgs = projectorFromArgs([...model.args, ...(model.engineArgs['llama-server'] ?? [])]);
      const projectorPath = fromArgs === undefined ? await projectorBeside(model.path) : (fromArgs ?? undefined);
      return {
        id: model.id,
        aliases: model.aliases,
        path: model.path,
        ...identity,
        ...(model.ctx !== undefined ? { configuredCtx: model.ctx } : {}),
        priority: model.priority,
        pinned: model.pinned,
        ...(model.draft !== undefined ? { draftId: model.draft } : {}),
        ...(model.fallback !== undefined ? { fallbackId: model.fallback } : {}),
        gpuLayers: model.gpuLayers,
        mixedSplit: model.mixedSplit,
        ...(model.embeddings === true ? { embeddings: { modelPools: false } } : {}),
        repack: model.repack,
        idleTtlMs: model.idleTtlMs,
        hangLimitMs: model.hangLimitMs,
        limits: model.limits,
        engine: model.engine,
        args: model.args,
        engineArgs: model.engineArgs,
        env: model.env,
        ...(projectorPath !== undefined ? { projectorPath } : {}),
        source: 'config',
        configIndex: model.index,
      };
    }));

    // Configured models override discovered ones with the same (resolved) file.
    const configuredFiles = new Set(configured.flatMap((e) => [e.path, ...(e.realPath ? [e.realPath] : [])]));
    const discoveredFiles = settled.filter((f) => !configuredFiles.has(f.realPath) && !configuredFiles.has(f.path));
    const taken = new Set(config.models.flatMap((m) => [m.id, ...m.aliases]).map((name) => name.toLowerCase()));
    const ids = assignUniqueIds(discoveredFiles, taken, this.ids.remembered());
    const beingWritten = filesBeingWritten(growing, configuredFiles, new Set([...taken, ...ids.values()]), this.ids.remembered());
    // A discovered alias (a Hugging Face file's hf.co/OWNER/REPO:QUANT) yields to every configured
    // name and id, and the first file (by model dir, then path) keeps one that two files claim.
    const aliasTaken = new Set([...taken, ...[...ids.values()].map((id) => id.toLowerCase())]);
    const aliasesOf = (f: { aliases: readonly string[] }): string[] =>
      f.aliases.filter((alias) => {
        if (aliasTaken.has(alias.toLowerCase())) return false;
        aliasTaken.add(alias.toLowerCase());
        return true;
      });
    const discovered: Entry[] = discoveredFiles
      .map((f): Entry => ({
        id: ids.get(f.path)!,
        aliases: aliasesOf(f),
        path: f.path,
        file: { path: f.realPath, sizeBytes: f.sizeBytes, mtimeMs: f.mtimeMs },
        realPath: f.realPath,
        fileError: f.problem ? `${f.path}: ${f.problem}` : null,
        priority: 0,
        pinned: false,
        gpuLayers: 'all',
        mixedSplit: false,
        repack: true,
        idleTtlMs: DEFAULT_IDLE_TTL_MS,
        hangLimitMs: DEFAULT_HANG_LIMIT_MS,
        limits: config.defaultLimits,
        engine: 'auto',
        args: [],
        engineArgs: {},
        env: {},
        ...(f.projectorPath !== undefined ? { projectorPath: f.projectorPath } : {}),
        source: 'discovered',
      }))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

    const entries = [...configured, ...discovered];
    const read = (path: string | undefined) => (path === undefined ? Promise.resolve(undefined) : this.readMetadata(path));
    const metadata = await Promise.all(entries.map((e) => read(e.fileError || !e.file ? undefined : e.path)));
    const projectors = await Promise.all(entries.map((e) => read(e.projectorPath)));
    const byId = new Map(entries.map((e, i) => [e.id, i]));

    const references = referenceProblems(
      entries.map((e, i) => ({
        id: e.id,
        aliases: e.aliases,
        ...(e.draftId !== undefined ? { draftId: e.draftId } : {}),
        ...(e.fallbackId !== undefined ? { fallbackId: e.fallbackId } : {}),
        ...(e.configIndex !== undefined ? { configIndex: e.configIndex } : {}),
        vocabulary: factsOf(metadata[i])?.vocabulary ?? null,
        embeds: e.embeddings !== undefined || factsOf(metadata[i])?.pooling === true,
      })),
      config.file,
    );

    const ctxOf = (i: number) => {
      const entry = entries[i]!;
      const trained = factsOf(metadata[i])?.contextLength ?? null;
      return entry.configuredCtx ?? (trained !== null ? Math.min(trained, DEFAULT_CONTEXT_CAP) : UNKNOWN_CONTEXT);
    };

    const built = entries.map((entry, i): CatalogModel => {
      const ctx = ctxOf(i);
      // Priced as the engine holds it: every slot's context (the draft runs at the primary's).
      const held = engineContextTokens(ctx, entry.limits.parallel);
      const draftIndex = entry.draftId === undefined ? undefined : byId.get(entry.draftId);
      const draft = draftIndex === undefined ? undefined : entries[draftIndex];
      // The draft runs in the model's engine process, so its weights are repacked (or not) alike.
      // A learned ratio wins over the prior: the engine's build may repack less than the CPU allows.
      const cpuBufferRatios = entry.repack ? withCpuBufferPrior(this.cpuBufferPrior, this.cpuBufferRatios(entry)) : {};
      // The logits rows its engine reserves; the draft's context, in the same process, reserves
      // its own, one row a slot on llama-server (footprint.ts's logitsRows).
      const logits: LogitsShape = {
        engine: this.engineOf(entry),
        ...(entry.limits.parallel !== undefined ? { parallel: entry.limits.parallel } : {}),
        drafted: draft !== undefined,
        embeddings: entry.embeddings !== undefined || factsOf(metadata[i])?.pooling === true,
      };
      const own = ownEstimate(entry, metadata[i], projectors[i], held, cpuBufferRatios, logits);
      let estimate = own.estimate;
      let error = own.error;
      if (draftIndex !== undefined && draft && estimate) {
        const draftLogits = { ...logits, drafted: false, embeddings: false };
        const draftEstimate = ownEstimate({ ...draft, projectorPath: undefined }, metadata[draftIndex], undefined, held, cpuBufferRatios, draftLogits);
        if (draftEstimate.estimate) estimate = { ...estimate, draft: draftEstimate.estimate };
        else {
          estimate = null;
          error = `its draft "${draft.id}" cannot be used: ${draftEstimate.error}`;
        }
      }
      const hash = definitionHash({
        file: entry.file ?? { path: entry.path, sizeBytes: 0, mtimeMs: 0 },
        ctx,
        args: entry.args,
        engineArgs: entry.engineArgs,
        env: entry.env,
        gpuLayers: entry.gpuLayers,
        engine: entry.engine,
        ...(entry.projectorPath !== undefined ? { projectorPath: entry.projectorPath } : {}),
        ...(draft ? { draft: { id: draft.id, file: draft.file ?? { path: draft.path, sizeBytes: 0, mtimeMs: 0 }, gpuLayers: draft.gpuLayers } } : {}),
        ...(entry.fallbackId !== undefined ? { fallbackId: entry.fallbackId } : {}),
        ...(entry.embeddings !== undefined ? { embeddings: true } : {}),
        ...(entry.repack ? {} : { noRepack: true }),
        ...(entry.limits.parallel !== undefined ? { parallel: entry.limits.parallel } : {}),
      });
      return {
        id: entry.id,
        aliases: entry.aliases,
        path: entry.path,
        sizeBytes: entry.file?.sizeBytes ?? 0,
        ctx,
        priority: entry.priority,
        pinnedByDefault: entry.pinned,
        ...(entry.draftId !== undefined ? { draftId: entry.draftId } : {}),
        ...(entry.fallbackId !== undefined ? { fallbackId: entry.fallbackId } : {}),
        gpuLayers: entry.gpuLayers,
        mixedSplit: entry.mixedSplit,
        idleTtlMs: entry.idleTtlMs,
        hangLimitMs: entry.hangLimitMs,
        limits: entry.limits,
        engine: entry.engine,
        args: entry.args,
        engineArgs: entry.engineArgs,
        env: entry.env,
        ...(entry.projectorPath !== undefined ? { projectorPath: entry.projectorPath } : {}),
        ...(entry.embeddings !== undefined || factsOf(metadata[i])?.pooling === true ? { embeddings: { modelPools: factsOf(metadata[i])?.pooling === true } } : {}),
        repack: entry.repack,
        cpuMatrixBytes: cpuMatricesOf(factsOf(metadata[i])),
        estimate: estimate ? withMeasurement(estimate, this.measurements.measuredBytes(entry.id, hash)) : null,
        metadataError: error,
        definitionHash: hash,
        source: entry.source,
      };
    });
    // A file being replaced stays listed as it was (settling.ts), header facts included: the new
    // file's (a context read from it) would change the definition twice, once now and again
    // when it settles, and a header still being written may not read at all.
    const models = built.map((m) => (standingIn.has(m.path) ? (this.assembly.models.find((p) => p.id === m.id && p.path === m.path) ?? m) : m));
    const discoveredIds = new Map(discoveredFiles.map((f) => [f.realPath, ids.get(f.path)!]));
    return { models, references, problems: discovery.problems, settleRecheckInMs: recheckInMs, discoveredIds, beingWritten };
  }
}

/**
 * A config accepted earlier can break later without an edit (its draft's file was deleted, a
 * discovered draft was renamed). Those models stay listed with the broken reference as the
 * reason they cannot launch, instead of the whole catalog refusing to load.
 */
function withReferenceErrors(assembly: Assembly): Assembly {
  if (assembly.references.length === 0) return assembly;
  const reasons = new Map<string, string>();
  for (const problem of assembly.references) if (!reasons.has(problem.modelId)) reasons.set(problem.modelId, problem.message);
  return {
    ...assembly,
    models: assembly.models.map((m) => {
      const reason = reasons.get(m.id);
      return reason === undefined ? m : { ...m, estimate: null, metadataError: m.metadataError ?? reason };
    }),
  };
}

function factsOf(result: MetadataResult | undefined): GgufFacts | undefined {
  return result?.ok ? result.facts : undefined;
}

function cpuMatricesOf(facts: GgufFacts | undefined): Record<string, number> | null {
  return facts?.cpuMatrixBytes === undefined ? null : totalMatrixBytes(facts.cpuMatrixBytes);
}

function ownEstimate(
  entry: Pick<Entry, 'path' | 'fileError' | 'gpuLayers' | 'projectorPath'>,
  metadata: MetadataResult | undefined,
  projector: MetadataResult | undefined,
  ctx: number,
  cpuBufferRatios: CpuBufferRatios,
  logits: LogitsShape,
): { estimate: FootprintEstimate | null; error: string | null } {
  if (entry.fileError) return { estimate: null, error: entry.fileError };
  if (!metadata) return { estimate: null, error: `${entry.path}: the model file cannot be read` };
  if (!metadata.ok) return { estimate: null, error: metadata.error };
  if (projector && !projector.ok) return { estimate: null, error: `its projector cannot be used: ${projector.error}` };
  const result = estimateFootprint({
    path: entry.path,
    facts: metadata.facts,
    contextTokens: ctx,
    gpuLayers: entry.gpuLayers,
    projector: projector?.ok ? projector.facts : null,
    cpuBufferRatios,
    logits,
  });
  return result.ok ? { estimate: result.estimate, error: null } : { estimate: null, error: result.error };
}
