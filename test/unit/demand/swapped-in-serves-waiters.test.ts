// "A model swapped in for waiting requests serves them before it can be swapped out again"
// (issue 10), asserted where it happens: across the pieces that make it, wired as the daemon
// wires them (core/daemon.ts) on a fake clock, with no process. The real controller, desired
// state, turns, activity, gateway and the router's activation; the recording server stands in
// for the supervisor (it refuses to stop a claimed server, as the supervisor does).
//
// Why this level and not one piece's unit test: the property is made by four of them together
// (a busy model's turn ends and it drains; the controller swaps the waited-for model in and
// counts it active while it loads; its waiters claim it the moment it is ready, before a pass
// can pass its turn on; a claimed server is never stopped). A test of any one with the others
// scripted would script the very answer it should check.
import { afterEach, describe, expect, it } from 'vitest';
import { activate } from '../../../core/router/activation.js';
import { Controller } from '../../../core/controller/index.js';
import { ModelActivity } from '../../../core/demand/activity.js';
import { DaemonDesiredState } from '../../../core/demand/desired-state.js';
import { createGateway, type GatewayParts } from '../../../core/demand/gateway.js';
import { ModelTurns } from '../../../core/demand/turns.js';
import { Notice } from '../../../core/common/notice.js';
import { footprintAt } from '../../../core/policy/levels.js';
import { oneGpuBudget } from '../../bench/one-gpu-budget.js';
import { FakeClock } from '../../support/fake-clock.js';
import { RecordingServer } from '../../support/recording-server.js';
import { catalogModel } from '../../support/catalog-model.js';

const MiB = 1024 ** 2;
/** Fake time an engine takes to load, and to answer one request. */
const LOAD_MS = 1_000;
const ANSWER_MS = 400;
const TURN_MS = 2_000;

/** What happened, in order: a request served (by which model), or a server stopped. */
type Happening = { kind: 'served'; request: string; servedBy: string } | { kind: 'refused'; request: string; message: string } | { kind: 'stopped'; modelId: string };

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** A daemon core on a fake clock: two models that do not fit together, every load LOAD_MS long. */
function daemonCore() {
  const clock = new FakeClock();
  const models = [catalogModel('a'), catalogModel('b')];
  const footprint = footprintAt('full', models[0]!.estimate!).deviceBytes;
  // One and a half models' room: a switch is a swap.
  const budgetBytes = Math.floor(1.5 * footprint);
  const budget = oneGpuBudget(budgetBytes, 1024 * MiB, 0);
  const server = new RecordingServer(() => footprint, () => clock.now());
  const happened: Happening[] = [];
  server.onServerEvent((event) => {
    if (event.type === 'ServerStopped') happened.push({ kind: 'stopped', modelId: event.modelId });
    // Every load takes LOAD_MS: held from its spawn (the hold is read just after), released later.
    if (event.type === 'ServerSpawned') {
      server.hold('launch', event.modelId);
      clock.setTimeout(() => server.release('launch', event.modelId), LOAD_MS);
    }
  });
  const activity = new ModelActivity(clock);
  // The turns ask the controller, which is made after them (as in core/daemon.ts).
  let controller: Controller | null = null;
  const turns = new ModelTurns({
    rivalsOf: (id) => controller?.yieldsTo(id) ?? [],
    passSoon: () => controller?.trigger(),
    activity,
    inFlight: (id) => server.inFlight(id),
    turnMs: TURN_MS,
    clock,
  });
  const desired = new DaemonDesiredState({
    models: () => models,
    isPinned: () => false,
    heldForTurn: (id) => turns.holds(id),
    activity,
    inFlight: (id) => server.inFlight(id),
    budget: async () => budget,
  });
  const quiet = { info: () => {}, warn: () => {}, error: () => {} };
  const running = new Controller({ provider: desired, server, clock, log: quiet, classify: () => 'crash' });
  controller = running;
  // The supervisor's side of a claim, over the recording server's count (what its evict checks).
  const supervisor: GatewayParts['supervisor'] = {
    claim(modelId) {
      const release = server.claim(modelId);
      if (release === null) return null;
      return { endpoint: { port: 1, apiKey: 'key', pid: 1, anthropicMessages: false, engine: 'embedded' as const, toolCalls: true }, lost: new Notice(), progressed: () => {}, release, beforeChat: () => Promise.resolve() };
    },
    inFlight: (modelId) => server.inFlight(modelId),
    status: () => null,
    serverEnded: async () => {},
  };
  const gateway = createGateway({
    catalog: { models: () => models, resolve: (name) => models.find((m) => m.id === name) },
    controller: running,
    supervisor,
    activity,
    startedAt: 0,
    turns,
    now: () => clock.now(),
  });

  const abort = new AbortController();
  const run = running.run(abort.signal);
  stops.push(async () => {
    abort.abort();
    turns.close();
    await run;
  });

  const start = clock.now();
  /** Which requests are waiting (sent, not yet served nor refused). */
  const waiting = new Set<string>();
  /**
   * Sends a request `at` ms after the start: it activates as the router does and, once served, holds
   * its claim for ANSWER_MS. The activation's own bound is real time (45 s) and never passes:
   * every wait here ends on the fake clock.
   */
  function send(request: string, modelId: string, at: number): void {
    clock.setTimeout(() => {
      waiting.add(request);
      void activate(gateway, modelId, new Notice(), { waitMs: 45_000, retryAfterSeconds: 5 }).then((activation) => {
        waiting.delete(request);
        if (activation.kind === 'refused') return happened.push({ kind: 'refused', request, message: activation.error.message });
        if (activation.kind !== 'ready') return;
        happened.push({ kind: 'served', request, servedBy: activation.claim.servedBy });
        clock.setTimeout(() => activation.claim.release(), ANSWER_MS);
      });
    }, start + at - clock.now());
  }
  return { clock, server, happened, waiting, send };
}

describe('a model swapped in for waiting requests', () => {
  it('serves every request that waited for it before it is swapped out, while requests keep coming for the other; then the other gets its turn', async () => {
    const core = daemonCore();
    // A steady client on 'a', a request every 150 ms for 8 s: 'a' is never idle on its own.
    const aRequests: string[] = [];
    for (let at = 0; at < 8_000; at += 150) {
      aRequests.push(`a@${at}`);
      core.send(`a@${at}`, 'a', at);
    }
    // Requests for 'b', from after 'a' is up. a's turn ends at 3500 (b@1500 has waited TURN_MS)
    // and a's requests wait from then on; b@3700 comes after the first of them, so it is not the
    // oldest request waiting when b is swapped in, and it must still be served by b.
    const bRequests = ['b@1500', 'b@2500', 'b@3700'];
    for (const request of bRequests) core.send(request, 'b', Number(request.slice(2)));

    // When b's load begins, which requests wait for it.
    let waitingAtLoad: string[] | null = null;
    core.server.onServerEvent((event) => {
      if (event.type === 'ServerSpawned' && event.modelId === 'b' && waitingAtLoad === null) waitingAtLoad = [...core.waiting].filter((r) => r.startsWith('b@'));
    });

    await core.clock.advance(30_000);

    expect(core.happened.filter((h) => h.kind === 'refused')).toEqual([]);
    expect(core.waiting.size).toBe(0);
    expect(waitingAtLoad).toEqual(bRequests);
    const bStopped = core.happened.findIndex((h) => h.kind === 'stopped' && h.modelId === 'b');
    expect(bStopped).toBeGreaterThan(-1); // b did go again, for a's waiting requests
    for (const request of bRequests) {
      const served = core.happened.findIndex((h) => h.kind === 'served' && h.request === request);
      expect({ request, servedBy: core.happened[served], beforeBStopped: served < bStopped }).toEqual({
        request,
        servedBy: { kind: 'served', request, servedBy: 'b' },
        beforeBStopped: true,
      });
    }
    // Every request for 'a' is served by 'a', those that waited through b's turn once b is gone.
    const servedA = core.happened.filter((h) => h.kind === 'served' && h.request.startsWith('a@'));
    expect(servedA.map((h) => h.kind === 'served' && h.request).sort()).toEqual([...aRequests].sort());
    expect(servedA.every((h) => h.kind === 'served' && h.servedBy === 'a')).toBe(true);
    const aAfterB = core.happened.slice(bStopped).filter((h) => h.kind === 'served' && h.request.startsWith('a@'));
    expect(aAfterB.length).toBeGreaterThan(0);
    // One swap each way while they waited: b in once, a back once.
    expect(core.server.launches().map((l) => l.modelId)).toEqual(['a', 'b', 'a']);
  });
});
