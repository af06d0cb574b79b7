// The admin snapshot: everything a person sees in the tray, the dashboard and `llmtray status`,
// in one value. One service builds it (core/admin); the HTTP + SSE transport, the Electron IPC
// bridge, the CLI and the renderer all consume this type and nothing else, so a field added
// here is a compile error everywhere it is not handled.
import type { LaunchLevel } from './launch-level.js';
import type { LeftOut, Placement } from './plan.js';
import type { ModelStatus } from './model-status.js';

export type EngineKind = 'embedded' | 'llama-server';

/**
 * A model's limits on requests (config.yaml: `parallel` and `queueLimit` on the model, defaults
 * under `engines:`). Each absent: no limit of llmtray's, as before the fields existed.
 */
export interface ModelLimits {
  /**
   * Requests served at once: its engine's slots (llama.cpp's `-np`), each with the model's whole
   * context, the KV cache priced for all of them. llmtray keeps the queue: the engine never holds
   * more than this. Absent: the engine's own default slots, and no count kept here.
   */
  parallel?: number;
  /**
   * How many more requests may wait for the model (for its load, for room, for a free slot); a
   * request past both limits is refused at once with a 429. Absent: any number wait, each up to
   * `activationWait`.
   */
  queueLimit?: number;
}

/**
 * Where a resident model's engine listens, and its process. Never its per-launch key: only
 * the router holds that, so whoever reads the snapshot still has to go through the router's
 * guards (the Host check, client keys, the activation bound) to reach a model.
 */
export interface UpstreamEndpoint {
  baseUrl: string;
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
  /** Configured context, tokens: what each request gets (the engine holds it `limits.parallel` times). */
  contextTokens: number;
  /** Its limits on requests as configured; `{}` for none. */
  limits: ModelLimits;
  /** Its repeating blocks (llama.cpp's block count, capped by its GPU layers), for "30 of 48 layers on GPU 0"; null when unknown. */
  layerCount: number | null;
  /** Device bytes the model is estimated to need at each level (its draft included). */
  estimateBytes: Record<LaunchLevel, number>;
  /** What the running server really uses (RSS of its process tree, or the driver's figure); null until measured. */
  measuredBytes: number | null;
  inFlight: number;
  /** Requests waiting for it now: for its load, for room, or for its turn (they are not in flight yet). */
  waiting: number;
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
  /**
   * Its conversations kept on disk across evictions (the data dir's conversations folder), to
   * be restored when a prompt shares their prefix: how many and their bytes; 0 and 0 for none.
   */
  savedConversations: { count: number; bytes: number };
}

/**
 * One holder of device memory, for the stacked budget bar. 'spare': the warm spare engine, a
 * process with its runtime started and no model, which the next launch adopts; it holds only
 * room the plan leaves free and is given back first (core/controller/spare-verdict.ts).
 */
export interface MemoryHolder {
  kind: 'model' | 'draft' | 'spare' | 'other-programs' | 'reserve';
  /** The model id for kind 'model' / 'draft'. */
  modelId: string | null;
  bytes: number;
}

export interface GpuView {
  /** The budget's number for the card: cards only, display controllers never count (see `displays`). */
  index: number;
  name: string;
  /** What the engine calls the card ('CUDA0', 'ROCm1', 'Vulkan0'): llama-server's name, else the driver's number in its backend. Absent when neither is known. */
  engineDevice?: string;
  /** Why the card's figures are not fresh: its vendor tool keeps failing and its budget is held at the last good sample. Absent while it is measured. */
  warning?: string;
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
  /** Sum of resident models' footprints and the warm spare's, bytes. */
  usedBytes: number;
  /** A hard limit from the config, when set. */
  limitBytes: number | null;
  gpus: GpuView[];
  /** Display controllers no engine computes on (an integrated GPU without a backend, a BMC chip): shown as such, never numbered or counted. Absent when none. */
  displays?: { name: string; busAddress: string | null }[];
  /**
   * GPUs that are gone (fallen off the bus, not back from a suspend: their vendor tool can no longer
   * reach them while it reaches the others): not in `gpus`, no budget, their models relaunched
   * elsewhere; `reason` names the card and why. Absent when none.
   */
  goneGpus?: { index: number; name: string; busAddress: string; reason: string }[];
  /**
   * What holds the whole budget, biggest first: each resident model and its draft, then the warm spare. In 'cpu'
   * mode (no GPU) this is the only picture of memory there is; with GPUs each GpuView has its
   * own share.
   */
  holders: MemoryHolder[];
  hostTotalBytes: number;
  hostAvailableBytes: number;
  /** What the saved conversations of every model take on disk, bytes (not memory: shown beside it); 0 for none. */
  savedConversationsBytes: number;
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

/**
 * One of the daemon's own outputs (its terminal, or the file its stderr was sent to) that
 * failed: the daemon serves on and keeps its logs in memory, but nothing more reaches there.
 */
export interface LostOutput {
  stream: 'stdout' | 'stderr';
  /** The system's code: EPIPE (the reader went away), ENOSPC (its disk is full), EIO, ... */
  code: string;
  message: string;
  at: number;
}

export interface Snapshot {
  /** Monotonic revision; a client that sees a smaller one knows the daemon restarted. */
  revision: number;
  startedAt: number;
  /** The OpenAI-compatible base URL local apps use, e.g. http://127.0.0.1:PORT/v1. */
  endpoint: string;
  /**
   * The same base URL as other machines reach it, when listen.host is a network address: that
   * address (for 0.0.0.0 or ::, each of this machine's), then each of listen.allowedHosts, as
   * `llmtray serve` prints them. Empty on a loopback listener.
   */
  networkEndpoints: string[];
  /**
   * Whether a request to /v1 must carry one of listen.clientKeys: once any key is configured
   * (from 127.0.0.1 too, which every user of the machine can reach), and always on a network
   * listener, which serves nobody while the list is empty.
   */
  keysRequired: boolean;
  /**
   * The configured keys' names, so a person can tell which app's key to use. Never the keys:
   * the snapshot goes to every admin client (the tray, the CLI, each dashboard tab, and other
   * machines under listen.admin: network), and a key in it would be one read away from /v1.
   */
  clientKeyNames: string[];
  models: ModelView[];
  budget: BudgetView;
  plan: PlanView | null;
  /** Config problems that kept the config in force running (see configInForce); empty when the config is fine. */
  configErrors: string[];
  /**
   * What the daemon runs on: the config file's last good content, or the defaults (discovery
   * only: the file is absent, was deleted, or has had no good content since). A surface says
   * "the last good config keeps running" only for 'file'.
   */
  configInForce: 'file' | 'defaults';
  /** Where models come from, for the dashboard's empty state. */
  configPath: string;
  modelDirs: string[];
  /** The daemon's stdout or stderr that can no longer be written (empty while both work). */
  lostOutputs: LostOutput[];
}
