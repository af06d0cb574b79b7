// The daemon's gateway over a scripted controller and supervisor, for the tests of the gateway and
// of what is decided through it (gateway.test.ts, admission.test.ts). The supervisor side keeps
// its claims in the real ServerClaims, so a claim behaves as the supervisor's does (counted, lost,
// released once); the controller side answers each method the way the real one's contract says.
import type { ControllerEvent, Unservable } from '../../../core/contracts/controller-events.js';
import { phaseOfState, type ModelStateName, type ModelStatus } from '../../../core/contracts/model-status.js';
import { ModelActivity } from '../../../core/demand/activity.js';
import { createGateway, type GatewayParts } from '../../../core/demand/gateway.js';
import { ModelTurns } from '../../../core/demand/turns.js';
import { ServerClaims, type Claim } from '../../../core/engine/supervisor/server-claims.js';
import type { ServerStatus } from '../../../core/engine/supervisor/supervisor.js';
import type { catalogModel } from '../../support/catalog-model.js';
import { FakeClock } from '../../support/fake-clock.js';

type ControllerSide = GatewayParts['controller'];
type SupervisorSide = GatewayParts['supervisor'];

function statusOf(modelId: string, state: ModelStateName, extra: Partial<ModelStatus> = {}): ModelStatus {
  return {
    modelId,
    state,
    phase: phaseOfState(state),
    level: state === 'ready' || state === 'active' ? 'full' : null,
    busy: state === 'active',
    recovery: { kind: 'none', attempts: 0, nextAction: null, nextAttemptAt: null, lastError: null },
    servedBy: null,
    unschedulableReason: null,
    next: null,
    since: 0,
    ...extra,
  };
}

/** The controller's side: statuses, fallbacks, refusals and turns as set by the test; events on change. */
export class ScriptedController implements ControllerSide {
  readonly statuses = new Map<string, ModelStatus>();
  readonly fallbacks = new Map<string, string>();
  readonly unservable = new Map<string, Unservable>();
  readonly yields = new Map<string, readonly string[]>();
  triggers = 0;
  refreshes = 0;
  /** The models the gateway told it had answered, in order. */
  readonly answered: string[] = [];
  private stopped = false;
  private readonly listeners = new Set<(event: ControllerEvent) => void>();

  status(modelId: string): ModelStatus | undefined {
    return this.statuses.get(modelId);
  }
  whyUnservable(modelId: string): Unservable | null {
    return this.unservable.get(modelId) ?? null;
  }
  waitReason(modelId: string): string {
    return `it is ${this.statuses.get(modelId)?.state ?? 'waiting for its first pass'}`;
  }
  reconcileNow(): Promise<void> {
    return this.stopped ? Promise.reject(new Error('the controller is not running')) : Promise.resolve();
  }
  trigger(): void {
    this.triggers++;
  }
  refreshSoon(): void {
    this.refreshes++;
  }
  servingModel(modelId: string): string {
    return this.fallbacks.get(modelId) ?? modelId;
  }
  served(modelId: string): void {
    this.answered.push(modelId);
  }
  /** Models whose server runs an old definition, as the test sets them. */
  readonly outdated = new Set<string>();
  definitionPending(modelId: string): boolean {
    return this.outdated.has(modelId);
  }
  yieldsTo(modelId: string): readonly string[] {
    return this.yields.get(modelId) ?? [];
  }
  hasStopped(): boolean {
    return this.stopped;
  }
  onEvent(listener: (event: ControllerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  set(modelId: string, state: ModelStateName, extra: Partial<ModelStatus> = {}): void {
    const previous = this.statuses.get(modelId) ?? null;
    const status = statusOf(modelId, state, extra);
    this.statuses.set(modelId, status);
    this.emit({ type: 'ModelStateChanged', modelId, status, previous });
  }
  /** The run ended (quit): hasStopped turns true before the event, as in the real one. */
  stop(): void {
    this.stopped = true;
    this.emit({ type: 'ControllerStopped', at: 0 });
  }
  private emit(event: ControllerEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }
}

export interface ScriptedServer {
  phase: 'loading' | 'ready' | 'stopping';
  port: number;
  apiKey: string;
  startedAt: number;
  /** The engine's own load progress while loading (its 503 body), or null. */
  loadProgress: number | null;
  /** How long the model's last load took, or null before its first. */
  lastLoadMs: number | null;
  /** Whether it serves Anthropic's Messages API itself (the supervisor asks it when it becomes ready). */
  anthropicMessages: boolean;
  claims: ServerClaims;
}

/** The supervisor's side: one server per model, claimable only while ready, as the real one. */
export class ScriptedSupervisor implements SupervisorSide {
  readonly servers = new Map<string, ScriptedServer>();
  readonly endedAsked: { modelId: string; port: number; apiKey: string }[] = [];
  endedAfter: Promise<void> = Promise.resolve();

  run(modelId: string, port: number, phase: ScriptedServer['phase'] = 'ready', progress: Partial<Pick<ScriptedServer, 'startedAt' | 'loadProgress' | 'lastLoadMs'>> = {}): ScriptedServer {
    const server = { phase, port, apiKey: `key-${port}`, anthropicMessages: false, claims: new ServerClaims(), startedAt: 0, loadProgress: null, lastLoadMs: null, ...progress };
    this.servers.set(modelId, server);
    return server;
  }
  status(modelId: string): ServerStatus | null {
    const server = this.servers.get(modelId);
    if (server === undefined) return null;
    const { phase, port, startedAt, loadProgress, lastLoadMs } = server;
    return { modelId, phase, level: 'full', pid: port, port, startedAt, readyAt: phase === 'ready' ? startedAt : null, loadProgress, lastLoadMs, exit: null };
  }
  claim(modelId: string): Claim | null {
    const server = this.servers.get(modelId);
    if (server === undefined || server.phase !== 'ready') return null;
    return server.claims.add({ port: server.port, apiKey: server.apiKey, pid: server.port, anthropicMessages: server.anthropicMessages, engine: 'llama-server', toolCalls: true });
  }
  inFlight(modelId: string): number {
    return this.servers.get(modelId)?.claims.count ?? 0;
  }
  serverEnded(modelId: string, endpoint: { port: number; apiKey: string }, signal: AbortSignal): Promise<void> {
    this.endedAsked.push({ modelId, ...endpoint });
    return Promise.race([this.endedAfter, new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))]);
  }
}

export function gatewayWith(options: { turnMs?: number; models?: ReturnType<typeof catalogModel>[] } = {}) {
  const clock = new FakeClock(undefined, 10_000);
  const controller = new ScriptedController();
  const supervisor = new ScriptedSupervisor();
  const activity = new ModelActivity(clock);
  const turns = new ModelTurns({
    rivalsOf: (id) => controller.yieldsTo(id),
    passSoon: () => controller.trigger(),
    activity,
    inFlight: (id) => supervisor.inFlight(id),
    turnMs: options.turnMs ?? 2_000,
    clock,
  });
  const models = options.models ?? [];
  const gateway = createGateway({
    catalog: { models: () => models, resolve: (name) => models.find((m) => m.id === name || m.aliases.includes(name)) },
    controller,
    supervisor,
    activity,
    startedAt: 1_700_000_000_500,
    turns,
    now: () => clock.now(),
  });
  return { clock, controller, supervisor, activity, turns, gateway };
}

export const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Whether the promise has settled, after letting pending callbacks run. */
export async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await turn();
  return done;
}
