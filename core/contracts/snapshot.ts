// The admin snapshot: everything a person sees in the tray, the dashboard and `llmtray status`,
// in one value. One service builds it (core/admin); the HTTP + SSE transport, the Electron IPC
// bridge, the CLI and the renderer all consume this type and nothing else, so a field added
// here is a compile error everywhere it is not handled.
import type { LaunchLevel } from '../policy/levels.js';
import type { LeftOut } from '../policy/schedule.js';
import type { Placement } from '../policy/place.js';
import type { ModelStatus } from './model-status.js';

export type EngineKind = 'embedded' | 'llama-server';

/** Where a resident model's engine listens. Shown only behind the admin token. */
export interface UpstreamEndpoint {
  baseUrl: string;
  apiKey: string;
  pid: number;
}

/** Load progress while a model's server is starting. */
export interface LoadProgress {
  /** 0..1 where the engine reports it; null when it does not (see loadFractionAt for the estimate). */
  fraction: number | null;
  startedAt: number;
  /** How long this model's last load took, ms: the basis of an estimate where the engine reports no fraction; null when it never loaded. */
  expectedMs: number | null;
}

export interface ModelView {
  id: string;
  aliases: string[];
  path: string;
  engine: EngineKind;
  priority: number;
  pinned: boolean;
  /**
   * The controller wants it resident now: pinned, requested (waiting or in flight), or used
   * within its idle TTL. What "should be running" means for `/metrics` and `llmtray status`:
   * a desired model that is not ready is the alert, and only this field can say so for a
   * model that has no server at all (the seed's alert that could never fire).
   */
  desired: boolean;
  draftId: string | null;
  fallbackId: string | null;
  /** Configured context, tokens. */
  contextTokens: number;
  /** Its repeating blocks (llama.cpp's block count, capped by its GPU layers), for "30 of 48 layers on GPU 0"; null when unknown. */
  layerCount: number | null;
  /** Device bytes the model is estimated to need at each level (its draft included). */
  estimateBytes: Record<LaunchLevel, number>;
  /** What the running server really uses (RSS of its process tree, or the driver's figure); null until measured. */
  measuredBytes: number | null;
  inFlight: number;
  /** Epoch ms; null when never used. */
  lastUsed: number | null;
  /** Controller-owned state, recovery and next step. */
  status: ModelStatus;
  loading: LoadProgress | null;
  /**
   * Where its server runs (or is loading): the GPUs it uses (main first) with the layers and
   * bytes on each, layers whose experts stay on the CPU, and bytes in host RAM; null when none runs.
   */
  placement: Placement | null;
  upstream: UpstreamEndpoint | null;
  /** Why the catalog could not read this model (corrupt GGUF, missing file), or null. */
  catalogError: string | null;
}

/** One holder of device memory, for the stacked budget bar. */
export interface MemoryHolder {
  kind: 'model' | 'draft' | 'other-programs' | 'reserve';
  /** The model id for kind 'model' / 'draft'. */
  modelId: string | null;
  bytes: number;
}

export interface GpuView {
  index: number;
  name: string;
  totalBytes: number;
  usedByOthersBytes: number;
  usedByUsBytes: number;
  reserveBytes: number;
  budgetBytes: number;
  holders: MemoryHolder[];
}

export interface BudgetView {
  /** 'gpu' with one or more devices; 'cpu' with none (host RAM, launches at minimal); 'unified' on Apple Silicon. */
  mode: 'gpu' | 'cpu' | 'unified';
  /** The budget the policy schedules against, bytes. */
  budgetBytes: number;
  /** Sum of resident models' footprints, bytes. */
  usedBytes: number;
  /** A hard limit from the config, when set. */
  limitBytes: number | null;
  gpus: GpuView[];
  /**
   * What holds the whole budget, biggest first: each resident model and its draft. In 'cpu'
   * mode (no GPU) this is the only picture of memory there is; with GPUs each GpuView has its
   * own share.
   */
  holders: MemoryHolder[];
  hostTotalBytes: number;
  hostAvailableBytes: number;
  /** Epoch ms of the sample. */
  sampledAt: number;
}

export interface PlanView {
  at: number;
  launch: string[];
  evict: string[];
  /** Each left out with its reason; `strict`: it will not fit until a pin goes or the budget grows. */
  unschedulable: LeftOut[];
}

export interface Snapshot {
  /** Monotonic revision; a client that sees a smaller one knows the daemon restarted. */
  revision: number;
  startedAt: number;
  /** The OpenAI-compatible base URL local apps use, e.g. http://127.0.0.1:PORT/v1. */
  endpoint: string;
  models: ModelView[];
  budget: BudgetView;
  plan: PlanView | null;
  /** Config problems that kept the last good config running; empty when the config is fine. */
  configErrors: string[];
  /** Where models come from, for the dashboard's empty state. */
  configPath: string;
  modelDirs: string[];
}
