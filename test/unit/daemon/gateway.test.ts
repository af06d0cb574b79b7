// The daemon's gateway where its two sources disagree: the supervisor sees an engine's exit at
// once, the controller only after the engine's output has drained. A scripted controller and
// supervisor stand in for the real ones, so each side can be told of the death separately.
import { describe, expect, it } from 'vitest';
import type { ControllerEvent } from '../../../core/contracts/controller-events.js';
import type { ModelStateName, ModelStatus } from '../../../core/contracts/model-status.js';
import { ModelActivity } from '../../../core/daemon/activity.js';
import { createGateway, type GatewayParts } from '../../../core/daemon/gateway.js';
import type { Endpoint } from '../../../core/engine/supervisor/supervisor.js';

const SERVING: ReadonlySet<ModelStateName> = new Set(['ready', 'active', 'degraded']);
type ControllerSide = GatewayParts['controller'];
type SupervisorSide = GatewayParts['supervisor'];

/** The controller's side: a state per model, events on change, waits resolved as the real one does. */
class ScriptedController implements ControllerSide {
  private readonly states = new Map<string, ModelStateName>();
  private readonly listeners = new Set<(event: ControllerEvent) => void>();

  status(modelId: string): ModelStatus | undefined {
    const state = this.states.get(modelId);
    return state === undefined ? undefined : ({ modelId, state } as ModelStatus);
  }
  whyUnservable = () => null;
  reconcileNow = async () => {};
  trigger = () => {};
  servingModel = (modelId: string) => modelId;
  waitUntilReady(modelId: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (signal.aborted) reject(signal.reason);
        else if (SERVING.has(this.states.get(modelId) ?? 'idle')) resolve();
        else return;
        this.listeners.delete(check);
      };
      this.listeners.add(check);
      signal.addEventListener('abort', check, { once: true });
      check();
    });
  }
  onEvent(listener: (event: ControllerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  set(modelId: string, state: ModelStateName): void {
    this.states.set(modelId, state);
    const status = this.status(modelId) as ModelStatus;
    for (const listener of [...this.listeners]) listener({ type: 'ModelStateChanged', modelId, status, previous: null });
  }
}

/** The supervisor's side: the live endpoint of each model, and who asked about ended servers. */
class ScriptedSupervisor implements SupervisorSide {
  readonly endpoints = new Map<string, Endpoint>();
  readonly endedAsked: { modelId: string; port: number; apiKey: string }[] = [];
  endedAfter: Promise<void> = Promise.resolve();

  endpointFor(modelId: string): Endpoint | null {
    return this.endpoints.get(modelId) ?? null;
  }
  serverEnded(modelId: string, endpoint: { port: number; apiKey: string }, signal: AbortSignal): Promise<void> {
    this.endedAsked.push({ modelId, ...endpoint });
    return Promise.race([this.endedAfter, new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))]);
  }
}

function gatewayWith() {
  const controller = new ScriptedController();
  const supervisor = new ScriptedSupervisor();
  const activity = new ModelActivity({ now: () => 1_000 });
  const gateway = createGateway({ catalog: { models: () => [], resolve: () => undefined }, controller, supervisor, activity, startedAt: 0 });
  return { controller, supervisor, activity, gateway };
}

const endpoint = (port: number): Endpoint => ({ port, apiKey: `key-${port}`, pid: port, level: 'full', startedAt: 0, readyAt: 0 });
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('the daemon gateway', () => {
  it('serves a model only while the controller calls it up and the supervisor has a live engine', () => {
    const { controller, supervisor, gateway } = gatewayWith();
    controller.set('m', 'ready');
    expect(gateway.endpointFor('m')).toBeUndefined(); // the engine's exit is known, its report is not
    supervisor.endpoints.set('m', endpoint(4100));
    expect(gateway.endpointFor('m')).toEqual({ baseUrl: 'http://127.0.0.1:4100', apiKey: 'key-4100' });
    controller.set('m', 'evicting');
    expect(gateway.endpointFor('m')).toBeUndefined();
  });

  it('does not end a wait while the controller has not heard of a death the supervisor has seen', async () => {
    const { controller, supervisor, activity, gateway } = gatewayWith();
    controller.set('m', 'ready'); // stale: the engine's exit is still draining
    let resolved = false;
    const wait = gateway.waitUntilReady('m', new AbortController().signal).then(() => (resolved = true));
    await turn();
    expect(resolved).toBe(false);
    expect(activity.recentlyUsed('m', 0)).toBe(true); // a request is counted as waiting

    controller.set('m', 'failed'); // the death reaches the controller
    controller.set('m', 'loading'); // the relaunch
    await turn();
    expect(resolved).toBe(false);
    supervisor.endpoints.set('m', endpoint(4200));
    controller.set('m', 'ready');
    await wait;
    expect(gateway.endpointFor('m')?.baseUrl).toBe('http://127.0.0.1:4200');
    expect(activity.recentlyUsed('m', 0)).toBe(false);
  });

  it('gives up that wait with the signal’s reason', async () => {
    const { controller, activity, gateway } = gatewayWith();
    controller.set('m', 'ready');
    const abort = new AbortController();
    const wait = gateway.waitUntilReady('m', abort.signal);
    await turn();
    abort.abort('client_gone');
    await expect(wait).rejects.toBe('client_gone');
    expect(activity.recentlyUsed('m', 0)).toBe(false);
  });

  it('asks the supervisor about the very engine that was unreachable, and returns when it answers', async () => {
    const { supervisor, gateway } = gatewayWith();
    let ended = (): void => {};
    supervisor.endedAfter = new Promise((resolve) => (ended = resolve));
    let returned = false;
    const unreachable = gateway
      .engineUnreachable('m', { baseUrl: 'http://127.0.0.1:4300', apiKey: 'key-4300' }, new AbortController().signal)
      .then(() => (returned = true));
    await turn();
    expect(supervisor.endedAsked).toEqual([{ modelId: 'm', port: 4300, apiKey: 'key-4300' }]);
    expect(returned).toBe(false);
    ended();
    await unreachable;
  });

  it('stops waiting for an engine’s end when the request’s signal aborts', async () => {
    const { supervisor, gateway } = gatewayWith();
    supervisor.endedAfter = new Promise(() => {});
    const abort = new AbortController();
    const unreachable = gateway.engineUnreachable('m', { baseUrl: 'http://127.0.0.1:4400', apiKey: 'k' }, abort.signal);
    abort.abort('client_gone');
    await expect(unreachable).resolves.toBeUndefined();
  });
});
