// A scripted model gateway for the router's tests (test/integration/router*.test.ts), standing in
// for controller + supervisor + catalog.
//
// Models are 'ready', 'cold' (ready `loadMs` after the first demand; never when loadMs is
// Infinity), 'queued' (kept out only by busy models: it waits, and comes when the test says),
// 'quarantined' or 'unschedulable'; one may fall back to another. A ready model whose
// `turnOver` is set refuses claims, as the daemon's does while another model's turn runs.
// Every state change is a change for `nextChange`. Each claim is recorded, with how often it
// was released and how often progress was reported, and `loseEngine` aborts the `lost` of every
// open claim on a model's engine, as the supervisor does for a hung one. A model's engine may
// be another than the shared fake one, and `onUnreachable` scripts what the gateway learns
// when the router reports that engine unreachable. `anthropicMessages` says whether its engine
// serves Anthropic's Messages API itself, as the supervisor learns from a real one. What a
// waiting request waits on (waitProgress) follows the state unless `progress` scripts it, and a
// load may end in quarantine (`loadFails`), as a corrupt file's first failure does.
import type { EmbeddingsOnly, EngineClaim, EngineLost, ModelGateway, QueueFull, RouterModelEntry, Unservable, WaitProgress } from '../../core/router/model-gateway.js';
import type { EngineKind } from '../../core/contracts/snapshot.js';
export type ScriptedState = 'ready' | 'cold' | 'loading' | 'queued' | 'quarantined' | 'unschedulable';

export interface ScriptedModel {
  id: string;
  aliases: string[];
  state: ScriptedState;
  reason: string;
  loadMs: number;
  fallbackTo?: string;
  /** While set, a ready model refuses new claims: another model's turn. */
  turnOver?: boolean;
  /** What waitReason says; default "it is <state>". */
  waitReason?: string;
  /** What the next reconcileNow pass decides for an unschedulable model. */
  onReconcile?: 'stays' | 'room-made';
  /** Where its engine listens; default the shared fake engine. */
  engineUrl?: string;
  /** When set, each claim is handed over already lost with this reason (found hung in between). */
  lostAtClaim?: string;
  /**
   * What engineUnreachable finds: 'lives-on' (default: nothing changed, resolves at once),
   * 'died' (the engine is gone: the model turns cold, and its relaunch is the shared fake
   * engine), or 'unknown' (nothing is learned until the router's signal aborts).
   */
  onUnreachable?: 'lives-on' | 'died' | 'unknown';
  /** Its engine serves Anthropic's Messages API itself (default: no, the router translates). */
  anthropicMessages?: boolean;
  /** Which engine its claims say answers (default: llama-server, as the fake engine plays one). */
  engine?: EngineKind;
  /** Whether its engine can call tools (default: yes). */
  toolCalls?: boolean;
  /** What waitProgress says while a request waits for it; default: loading (no fraction) while loading, else waiting for memory. */
  progress?: WaitProgress;
  /** Why it only embeds (default: it writes text): the router refuses it generating requests. */
  embeddingsOnly?: EmbeddingsOnly;
  /** When set, its load ends after loadMs with the model quarantined for this reason instead of ready. */
  loadFails?: string;
}

export interface ScriptedClaim extends EngineClaim {
  /** How often the router called release (the contract makes repeats harmless; the router makes none). */
  releases: number;
  /** How often the router reported progress. */
  progress: number;
  lose(reason: string): void;
}

export class ScriptedGateway implements ModelGateway {
  readonly calls: string[] = [];
  readonly loadsStarted = new Map<string, number>();
  readonly claims: ScriptedClaim[] = [];
  /** Requests waiting per model now (wait called, its done not yet). */
  readonly waiting = new Map<string, number>();
  /** How many nextChange calls were made. */
  nextChanges = 0;
  private stopped = false;
  private readonly changeWaiters = new Set<{ resolve: () => void; reject: (error: unknown) => void }>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly models: Map<string, ScriptedModel>,
    private readonly engineBaseUrl: string,
    private readonly engineKey: string,
  ) {}

  /** Ollama's routes ask it: no scripted model sees images; each launches with a 4096-token context. */
  modelFacts(modelId: string): { vision: boolean; contextTokens: number } | undefined {
    return this.models.has(modelId) ? { vision: false, contextTokens: 4096 } : undefined;
  }

  resolve(name: string): { modelId: string; embeddingsOnly: EmbeddingsOnly | null } | undefined {
    for (const model of this.models.values()) if (model.id === name || model.aliases.includes(name)) return { modelId: model.id, embeddingsOnly: model.embeddingsOnly ?? null };
    return undefined;
  }
  modelIds(): string[] {
    return [...this.models.keys()];
  }
  listModels(): RouterModelEntry[] {
    return [...this.models.values()].map((m) => ({
      id: m.id,
      object: 'model',
      created: 0,
      owned_by: 'llmtray',
      aliases: m.aliases,
      state: m.fallbackTo !== undefined ? 'fallback' : m.state === 'cold' ? 'idle' : m.state === 'unschedulable' ? 'queued' : m.state,
      level: m.state === 'ready' ? 'full' : null,
      served_by: m.fallbackTo ?? null,
      reason: m.state === 'quarantined' || m.state === 'unschedulable' ? m.reason : null,
    }));
  }
  whyUnservable(modelId: string): Unservable | null {
    const model = this.model(modelId);
    if (model.state === 'quarantined') return { code: 'model_quarantined', reason: model.reason };
    if (model.state === 'unschedulable') return { code: 'model_unschedulable', reason: model.reason };
    return null;
  }
  waitReason(modelId: string): string {
    const model = this.model(modelId);
    return model.waitReason ?? `it is ${model.state}`;
  }
  waitProgress(modelId: string): WaitProgress {
    const servedBy = this.model(modelId).fallbackTo ?? modelId;
    const model = this.model(servedBy);
    if (model.progress !== undefined) return model.progress;
    return model.state === 'loading' ? { kind: 'loading', servedBy, fraction: null, estimated: false } : { kind: 'memory', servedBy };
  }
  async reconcileNow(): Promise<void> {
    this.calls.push(`reconcileNow`);
    await new Promise((resolve) => setImmediate(resolve));
    for (const model of this.models.values()) {
      if (model.state === 'unschedulable' && model.onReconcile === 'room-made') {
        model.state = 'cold';
        this.demand(model.id);
      }
    }
  }
  demand(modelId: string): void {
    this.calls.push(`demand:${modelId}`);
    const model = this.model(modelId);
    if (model.state !== 'cold') return;
    model.state = 'loading';
    this.loadsStarted.set(modelId, (this.loadsStarted.get(modelId) ?? 0) + 1);
    if (!Number.isFinite(model.loadMs)) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (model.loadFails === undefined) this.setState(modelId, 'ready');
      else this.setState(modelId, 'quarantined', model.loadFails);
    }, model.loadMs);
    this.timers.add(timer);
  }
  wait(modelId: string): () => void {
    this.calls.push(`wait:${modelId}`);
    this.waiting.set(modelId, (this.waiting.get(modelId) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.waiting.set(modelId, (this.waiting.get(modelId) ?? 0) - 1);
    };
  }
  /** Scripted models have no limits: the admission is tested through the daemon's gateway (test/unit/demand/admission.test.ts) and the real daemon. */
  admit(): QueueFull | null {
    return null;
  }
  claim(modelId: string): EngineClaim | null {
    const servedBy = this.model(modelId).fallbackTo ?? modelId;
    const serving = this.model(servedBy);
    if (serving.state !== 'ready' || serving.turnOver === true) return null;
    const lost = new AbortController();
    const claim: ScriptedClaim = {
      servedBy,
      endpoint: { baseUrl: serving.engineUrl ?? this.engineBaseUrl, apiKey: this.engineKey },
      anthropicMessages: serving.anthropicMessages ?? false,
      engine: serving.engine ?? 'llama-server',
      toolCalls: serving.toolCalls ?? true,
      lost: lost.signal,
      releases: 0,
      progress: 0,
      progressed: () => void claim.progress++,
      release: () => void claim.releases++,
      lose: (reason) => lost.abort({ kind: 'hang', reason } satisfies EngineLost),
    };
    this.claims.push(claim);
    if (serving.lostAtClaim !== undefined) claim.lose(serving.lostAtClaim);
    return claim;
  }
  nextChange(signal: AbortSignal): Promise<void> {
    this.nextChanges++;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      if (this.stopped) return reject(new Error('llmtray is stopping, so no model will be loaded'));
      const waiter = {
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        reject,
      };
      const onAbort = (): void => {
        this.changeWaiters.delete(waiter);
        reject(signal.reason);
      };
      this.changeWaiters.add(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
  engineUnreachable(servingModelId: string, endpoint: { baseUrl: string }, signal: AbortSignal): Promise<void> {
    this.calls.push(`engineUnreachable:${servingModelId}@${endpoint.baseUrl}`);
    const model = this.model(servingModelId);
    if (model.onUnreachable === 'unknown') return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    if (model.onUnreachable === 'died') {
      model.state = 'cold';
      model.engineUrl = undefined;
    }
    return Promise.resolve();
  }

  /** Requests waiting in nextChange now. */
  get parked(): number {
    return this.changeWaiters.size;
  }
  /** Claims on the model's engine not yet released. */
  inFlight(servingModelId: string): number {
    return this.claims.filter((c) => c.servedBy === servingModelId && c.releases === 0).length;
  }
  get startedTotal(): number {
    return this.claims.length;
  }
  get finishedTotal(): number {
    return this.claims.filter((c) => c.releases > 0).length;
  }

  /** The controller's side: a state change, a change for every waiting request. */
  setState(modelId: string, state: ScriptedState, reason = ''): void {
    const model = this.model(modelId);
    model.state = state;
    model.reason = reason;
    this.changed();
  }
  /** A turn starts or ends for the model (a change too). */
  setTurnOver(modelId: string, turnOver: boolean): void {
    this.model(modelId).turnOver = turnOver;
    this.changed();
  }
  /** Some change that concerns other models: every waiting request looks again. */
  changed(): void {
    for (const waiter of [...this.changeWaiters]) {
      this.changeWaiters.delete(waiter);
      waiter.resolve();
    }
  }
  /** The model's engine is found hung: every open claim on it is lost, as the supervisor does before the kill. */
  loseEngine(servingModelId: string, reason: string): void {
    for (const claim of this.claims) if (claim.servedBy === servingModelId && claim.releases === 0) claim.lose(reason);
  }
  /** The controller's run ended: nothing will come any more. */
  stop(): void {
    this.stopped = true;
    for (const waiter of [...this.changeWaiters]) {
      this.changeWaiters.delete(waiter);
      waiter.reject(new Error('llmtray is stopping, so no model will be loaded'));
    }
  }

  dispose(): void {
    for (const timer of this.timers) clearTimeout(timer);
  }

  private model(modelId: string): ScriptedModel {
    const model = this.models.get(modelId);
    if (model === undefined) throw new Error(`scripted gateway has no model ${modelId}`);
    return model;
  }
}

export function scriptedModels(overrides: Partial<Record<string, Partial<ScriptedModel>>> = {}): Map<string, ScriptedModel> {
  const base: ScriptedModel[] = [
    { id: 'small', aliases: ['tiny'], state: 'ready', reason: '', loadMs: 0 },
    { id: 'big', aliases: [], state: 'ready', reason: '', loadMs: 0, fallbackTo: 'small' },
    { id: 'cold', aliases: [], state: 'cold', reason: '', loadMs: 20 },
    { id: 'never', aliases: [], state: 'cold', reason: '', loadMs: Number.POSITIVE_INFINITY },
    { id: 'blocked', aliases: [], state: 'queued', reason: '', loadMs: 0, waitReason: 'it is waiting for memory: needs 6.0 GB; 2.0 GB free, 4.0 GB held by active small' },
    { id: 'broken', aliases: [], state: 'quarantined', reason: 'It failed to start 5 times in a row: llama_model_load: error loading model: unknown model architecture.', loadMs: 0 },
    { id: 'huge', aliases: [], state: 'unschedulable', reason: 'needs 30.0 GB; 24.0 GB budget, 17.0 GB held by pinned qwen-32b.', loadMs: 20, onReconcile: 'stays' },
  ];
  return new Map(base.map((m) => [m.id, { ...m, ...overrides[m.id] }]));
}
