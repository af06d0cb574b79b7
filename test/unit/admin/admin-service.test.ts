import { describe, expect, it } from 'vitest';
import { AdminService, type ModelActions } from '../../../core/admin/admin-service.js';
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import { AdminRefusal } from '../../../core/contracts/admin-routes.js';
import type { CommandResult, ModelCommand } from '../../../core/contracts/commands.js';
import type { LogTail } from '../../../core/contracts/log-lines.js';
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import { FakeClock } from '../../support/fake-clock.js';
import { fixtureSnapshot } from '../../support/fixture-snapshot.js';
import { RequestLog } from '../../../core/demand/request-log.js';
import { requestRecord } from '../../support/request-records.js';

/** A service over a snapshot the test edits, actions that record their calls, and a fake clock. */
function setup(answer: (command: ModelCommand, id: string) => Promise<CommandResult> = async (c, id) => ({ ok: true, message: `${c} ${id}` })) {
  const clock = new FakeClock();
  let view = fixtureSnapshot();
  const calls: string[] = [];
  const action = (command: ModelCommand) => (id: string) => {
    calls.push(`${command} ${id}`);
    return answer(command, id);
  };
  const commands: ModelActions = { pin: action('pin'), unpin: action('unpin'), load: action('load'), unload: action('unload'), retry: action('retry') };
  // Position 7: five older lines fell off the daemon's ring, and positions still count them.
  const logs = new Map<string, LogTail>([['llama-3.1-8b', { lines: ['loading', 'ready'], next: 7 }]]);
  const warnings: string[] = [];
  const requests = new RequestLog(10);
  const service = new AdminService({
    buildSnapshot: () => view,
    commands,
    logs: (id) => logs.get(id),
    activity: (filter) => ({ requests: requests.list(filter), keep: requests.keep, keepBodiesBytes: 0 }),
    clock,
    warn: (message) => warnings.push(message),
  });
  const events: AdminEvent[] = [];
  return {
    clock,
    service,
    requests,
    calls,
    warnings,
    events,
    edit(change: (snapshot: Omit<Snapshot, 'revision'>) => void): void {
      view = structuredClone(view);
      change(view);
    },
    listen(): () => void {
      return service.subscribe((event) => events.push(event));
    },
    snapshots(): Snapshot[] {
      return events.flatMap((e) => (e.type === 'SnapshotUpdated' ? [e.snapshot] : []));
    },
  };
}

describe('AdminService revisions', () => {
  it('bumps the revision only when the content changes, ignoring the budget sample time', () => {
    const t = setup();
    const first = t.service.snapshot();
    expect(first.revision).toBe(1);
    t.edit((s) => { s.budget.sampledAt += 5_000; });
    const resampled = t.service.snapshot();
    expect(resampled.revision).toBe(1);
    expect(resampled.budget.sampledAt).toBe(first.budget.sampledAt + 5_000);
    t.edit((s) => { s.models[0]!.inFlight = 3; });
    expect(t.service.snapshot().revision).toBe(2);
    t.edit((s) => { s.models[0]!.inFlight = 2; });
    expect(t.service.snapshot().revision).toBe(3);
    expect(t.service.snapshot().revision).toBe(3);
  });
});

describe('AdminService events', () => {
  it('sends a full snapshot first, then a change after changed(), and nothing for an unchanged one', async () => {
    const t = setup();
    t.listen();
    expect(t.events).toHaveLength(1);
    expect(t.events[0]).toMatchObject({ type: 'SnapshotUpdated', snapshot: { revision: 1 } });

    t.service.changed();
    await t.clock.advance(1_000);
    expect(t.events).toHaveLength(1);

    t.edit((s) => { s.models[1]!.status.state = 'loading'; });
    t.service.changed();
    expect(t.events).toHaveLength(1); // never synchronously inside the caller's handler
    await t.clock.advance(0);
    expect(t.snapshots().map((s) => s.revision)).toEqual([1, 2]);
    expect(t.snapshots()[1]!.models[1]!.status.state).toBe('loading');
  });

  it('turns a burst into one snapshot and keeps at most one per 100 ms, always sending the last change', async () => {
    const t = setup();
    t.listen();
    for (let i = 0; i < 50; i++) {
      t.edit((s) => { s.models[0]!.inFlight = i; });
      t.service.changed();
    }
    await t.clock.advance(0);
    expect(t.snapshots()).toHaveLength(2);
    expect(t.snapshots()[1]!.models[0]!.inFlight).toBe(49);

    // Changes every 10 ms for one second: at most one snapshot per window.
    for (let ms = 10; ms <= 1_000; ms += 10) {
      t.edit((s) => { s.models[0]!.inFlight = ms; });
      t.service.changed();
      await t.clock.advance(10);
    }
    const sent = t.snapshots().slice(2);
    expect(sent.length).toBeGreaterThanOrEqual(9);
    expect(sent.length).toBeLessThanOrEqual(11);

    // The trailing edge: the last change is sent once its window ends, not dropped.
    t.edit((s) => { s.models[0]!.inFlight = 12_345; });
    t.service.changed();
    await t.clock.advance(100);
    expect(t.snapshots().at(-1)!.models[0]!.inFlight).toBe(12_345);
  });

  it('waits out the window after a snapshot before sending the next', async () => {
    const t = setup();
    t.listen();
    t.edit((s) => { s.models[0]!.inFlight = 7; });
    t.service.changed();
    await t.clock.advance(0);
    t.edit((s) => { s.models[0]!.inFlight = 8; });
    t.service.changed();
    expect(t.clock.pendingDelays()).toEqual([100]);
    await t.clock.advance(99);
    expect(t.snapshots().at(-1)!.models[0]!.inFlight).toBe(7);
    await t.clock.advance(1);
    expect(t.snapshots().at(-1)!.models[0]!.inFlight).toBe(8);
  });

  it('does not resend to a subscriber the snapshot it got on subscribing', async () => {
    const t = setup();
    const early: AdminEvent[] = [];
    t.service.subscribe((e) => early.push(e));
    t.edit((s) => { s.models[0]!.pinned = false; });
    t.service.changed();
    t.listen(); // subscribes after the change: its first snapshot already shows it
    await t.clock.advance(0);
    expect(t.snapshots().map((s) => s.revision)).toEqual([2]);
    expect(early.map((e) => (e.type === 'SnapshotUpdated' ? e.snapshot.revision : e.type))).toEqual([1, 2]);
  });

  it('publishes discrete events at once, in order, and stops after unsubscribe', async () => {
    const t = setup();
    const unsubscribe = t.listen();
    t.service.publish({ type: 'ModelQuarantined', modelId: 'kev-0.5b', reason: 'crashed 5 times', at: 1 });
    t.service.publish({ type: 'LogAppended', modelId: 'kev-0.5b', first: 0, lines: ['a', 'b'] });
    expect(t.events.map((e) => e.type)).toEqual(['SnapshotUpdated', 'ModelQuarantined', 'LogAppended']);
    unsubscribe();
    unsubscribe();
    t.service.publish({ type: 'LogAppended', modelId: 'kev-0.5b', first: 2, lines: ['c'] });
    t.edit((s) => { s.models[0]!.inFlight = 0; });
    t.service.changed();
    await t.clock.advance(100);
    expect(t.events).toHaveLength(3);
  });

  it('keeps serving the other listeners when one throws, and says so', () => {
    const t = setup();
    t.service.subscribe(() => { throw new Error('renderer gone'); });
    t.listen();
    t.service.publish({ type: 'LogAppended', modelId: 'kev-0.5b', first: 0, lines: ['x'] });
    expect(t.events.map((e) => e.type)).toEqual(['SnapshotUpdated', 'LogAppended']);
    expect(t.warnings).toEqual([
      'An admin event listener threw on SnapshotUpdated: renderer gone',
      'An admin event listener threw on LogAppended: renderer gone',
    ]);
  });
});

describe('AdminService commands', () => {
  it('refuses an unknown model naming the models that exist', async () => {
    const t = setup();
    const result = await t.service.runCommand({ id: 'phi-4', command: 'pin' });
    expect(result.ok).toBe(false);
    expect(result.code).toBe('unknown_model');
    expect(result.message).toContain("Unknown model 'phi-4'; the models are: kev-0.5b, llama-3.1-8b,");
    expect(t.calls).toEqual([]);
  });

  it('resolves an alias to the model id and passes the action result through', async () => {
    const t = setup(async (command, id) => (command === 'retry' ? { ok: false, message: `${id} is not quarantined` } : { ok: true, message: 'done' }));
    expect(await t.service.runCommand({ id: 'llama', command: 'unload' })).toEqual({ ok: true, message: 'done' });
    expect(await t.service.runCommand({ id: 'llama-3.1-8b', command: 'retry' })).toEqual({ ok: false, message: 'llama-3.1-8b is not quarantined' });
    expect(t.calls).toEqual(['unload llama-3.1-8b', 'retry llama-3.1-8b']);
  });

  it('finds a model by any spelling the router accepts: id or alias, in any case', async () => {
    const t = setup();
    for (const id of ['KEV-0.5B', 'Llama', 'LLAMA-3.1-8B']) expect((await t.service.runCommand({ id, command: 'load' })).ok).toBe(true);
    expect(t.calls).toEqual(['load kev-0.5b', 'load llama-3.1-8b', 'load llama-3.1-8b']);
    expect(await t.service.getLogs({ id: 'Llama' })).toMatchObject({ modelId: 'llama-3.1-8b' });
  });

  it('reports an action that throws as action_failed, and never rejects', async () => {
    const t = setup(async () => { throw new Error('EACCES: pins.json'); });
    expect(await t.service.runCommand({ id: 'kev-0.5b', command: 'pin' })).toEqual({ ok: false, code: 'action_failed', message: "pin 'kev-0.5b' failed: EACCES: pins.json" });
  });

  it('sends the effect of a command without waiting for the daemon to call changed()', async () => {
    const t = setup(async () => {
      t.edit((s) => { s.models[1]!.pinned = true; });
      return { ok: true, message: 'pinned' };
    });
    t.listen();
    await t.service.runCommand({ id: 'kev-0.5b', command: 'pin' });
    await t.clock.advance(0);
    expect(t.snapshots().at(-1)!.models[1]!.pinned).toBe(true);
  });

  it('answers logs by id or alias with the position after them, empty at 0 for a model that has not logged, and refuses an unknown one with a 404', async () => {
    const t = setup();
    expect(await t.service.getLogs({ id: 'llama' })).toEqual({ modelId: 'llama-3.1-8b', lines: ['loading', 'ready'], next: 7 });
    expect(await t.service.getLogs({ id: 'kev-0.5b' })).toEqual({ modelId: 'kev-0.5b', lines: [], next: 0 });
    const missing = await t.service.getLogs({ id: 'nope' }).catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(AdminRefusal);
    expect(missing).toMatchObject({ status: 404, code: 'unknown_model' });
    expect((missing as Error).message).toMatch(/^Unknown model 'nope'; the models are: kev-0.5b/);
  });
});

describe('AdminService activity', () => {
  it('lists the requests newest first, a model filter taking an alias for its id, and a name no model has as typed', async () => {
    const t = setup();
    t.requests.add(requestRecord({ id: 'a', model: 'llama-3.1-8b', servedBy: 'llama-3.1-8b' }));
    t.requests.add(requestRecord({ id: 'b', model: 'kev-0.5b', servedBy: null, status: 429 }));
    t.requests.add(requestRecord({ id: 'c', model: 'typo', servedBy: null, status: 404 }));
    expect((await t.service.getActivity()).requests.map((r) => r.id)).toEqual(['c', 'b', 'a']);
    expect((await t.service.getActivity({ model: 'LLAMA' })).requests.map((r) => r.id)).toEqual(['a']);
    expect((await t.service.getActivity({ model: 'typo' })).requests.map((r) => r.id)).toEqual(['c']);
    expect((await t.service.getActivity({ status: '4xx' })).requests.map((r) => r.id)).toEqual(['c', 'b']);
    expect(await t.service.getActivity({ client: 'nobody' })).toEqual({ requests: [], keep: 10, keepBodiesBytes: 0 });
  });
});
