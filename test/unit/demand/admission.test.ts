// Admission (core/demand/admission.ts): how many requests a model serves at once and how many more
// may wait for it. The rule as a table, then the rule where it acts: requests activated together
// through the router's activation and the daemon's gateway (gateway-harness.ts), counted one by
// one, the ones past both limits refused at once with the 429 that names them, and a freed slot
// taken by the request that waited longest.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { queueFullOf, slotsFull } from '../../../core/demand/admission.js';
import { Notice } from '../../../core/common/notice.js';
import { activate, type Activation } from '../../../core/router/activation.js';
import { catalogModel } from '../../support/catalog-model.js';
import { gatewayWith, settled, turn } from './gateway-harness.js';

describe('queueFullOf', () => {
  // limits, served (claims on its engine), waiting → refused with, or null (it may wait).
  const table: [string, { parallel?: number; queueLimit?: number }, number, number, ReturnType<typeof queueFullOf>][] = [
    ['no limits: anything waits', {}, 40, 40, null],
    ['parallel alone: slots are kept, the queue is not bounded', { parallel: 1 }, 1, 99, null],
    ['a free slot behind the queue: it may wait', { parallel: 2, queueLimit: 1 }, 1, 1, null],
    ['slots and queue full', { parallel: 1, queueLimit: 1 }, 1, 1, { modelId: 'm', parallel: 1, queueLimit: 1, served: 1, waiting: 1 }],
    ['a cold model: its first `parallel` waiters are the ones it serves once loaded', { parallel: 2, queueLimit: 1 }, 0, 2, null],
    ['a cold model, past both', { parallel: 2, queueLimit: 1 }, 0, 3, { modelId: 'm', parallel: 2, queueLimit: 1, served: 0, waiting: 3 }],
    ['queueLimit 0: only the slots', { parallel: 1, queueLimit: 0 }, 1, 0, { modelId: 'm', parallel: 1, queueLimit: 0, served: 1, waiting: 0 }],
    ['without parallel the engine takes every claim: served requests do not count', { queueLimit: 1 }, 30, 1, null],
    ['without parallel, the one served next and queueLimit more wait', { queueLimit: 1 }, 0, 2, { modelId: 'm', queueLimit: 1, served: 0, waiting: 2 }],
    ['without parallel, queueLimit 0 still lets the request its load is for wait', { queueLimit: 0 }, 0, 0, null],
  ];
  it.each(table)('%s', (_name, limits, served, waiting, expected) => {
    expect(queueFullOf('m', limits, served, waiting)).toEqual(expected);
  });

  it('slotsFull: only a model with parallel, once every slot is held', () => {
    expect([slotsFull({}, 1000), slotsFull({ parallel: 2 }, 1), slotsFull({ parallel: 2 }, 2), slotsFull({ parallel: 2, queueLimit: 0 }, 3)]).toEqual([false, false, true, true]);
  });
});

/** Activates `count` requests for `id` in one tick, as requests arriving together do. */
function activateTogether(gateway: ReturnType<typeof gatewayWith>['gateway'], id: string, count: number): Promise<Activation>[] {
  return Array.from({ length: count }, () => activate(gateway, id, new Notice(), { waitMs: 60_000, retryAfterSeconds: 10 }));
}

async function outcomes(activations: Promise<Activation>[]): Promise<(Activation['kind'] | 'waiting')[]> {
  await turn();
  return Promise.all(activations.map(async (a) => ((await settled(a)) ? (await a).kind : 'waiting')));
}

describe('admission through the activation and the gateway', () => {
  it('with parallel 1 and queueLimit 1, of four requests together one is served, one waits, two get a 429 naming the limits; the freed slot goes to the waiter', async () => {
    const { supervisor, gateway } = gatewayWith({ models: [catalogModel('demo-chat', { limits: { parallel: 1, queueLimit: 1 } })] });
    supervisor.run('demo-chat', 4100);
    const four = activateTogether(gateway, 'demo-chat', 4);
    expect(await outcomes(four)).toEqual(['ready', 'waiting', 'refused', 'refused']);
    expect(supervisor.inFlight('demo-chat')).toBe(1);
    const refusal = await four[2]!;
    expect(refusal.kind === 'refused' && refusal.error).toEqual({
      status: 429,
      source: 'router',
      type: 'requests',
      code: 'model_queue_full',
      param: null,
      message: "Model 'demo-chat' serves 1 request at once (parallel) and 1 more may wait (queueLimit); 2 are ahead of this one (1 being served, 1 waiting). Retry in 1 s.",
      headers: { 'retry-after': '1' },
    });

    const first = await four[0]!;
    if (first.kind !== 'ready') throw new Error('the first request was not served');
    first.claim.release();
    expect(await outcomes([four[1]!])).toEqual(['ready']);
    expect(supervisor.inFlight('demo-chat')).toBe(1);
    // Its slot is taken again: a fifth waits (the queue is empty now), a sixth is refused.
    expect(await outcomes(activateTogether(gateway, 'demo-chat', 2))).toEqual(['waiting', 'refused']);
  });

  it('never refuses nor holds back a request that takes no slot (a token count), however full the model is', async () => {
    const { supervisor, gateway } = gatewayWith({ models: [catalogModel('m', { limits: { parallel: 1, queueLimit: 0 } })] });
    supervisor.run('m', 4100);
    expect(await outcomes(activateTogether(gateway, 'm', 2))).toEqual(['ready', 'refused']);
    const count = activate(gateway, 'm', new Notice(), { waitMs: 60_000, retryAfterSeconds: 10 }, () => {}, false);
    expect(await outcomes([count])).toEqual(['ready']);
  });

  it('counts a cold model’s waiters against parallel + queueLimit, and serves them as slots allow once it is ready', async () => {
    const { controller, supervisor, gateway } = gatewayWith({ models: [catalogModel('m', { limits: { parallel: 2, queueLimit: 1 } })] });
    const five = activateTogether(gateway, 'm', 5);
    expect(await outcomes(five)).toEqual(['waiting', 'waiting', 'waiting', 'refused', 'refused']);
    supervisor.run('m', 4100);
    controller.set('m', 'ready');
    expect(await outcomes(five.slice(0, 3))).toEqual(['ready', 'ready', 'waiting']);
    expect(supervisor.inFlight('m')).toBe(2);
  });

  it('never has more than parallel claimed nor more than parallel + queueLimit admitted, whatever arrives and ends in between', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 3 }),
        fc.array(fc.oneof(fc.integer({ min: 1, max: 4 }).map((n) => ({ arrive: n })), fc.constant({ end: true })), { maxLength: 12 }),
        async (parallel, queueLimit, steps) => {
          const { supervisor, gateway } = gatewayWith({ models: [catalogModel('m', { limits: { parallel, queueLimit } })] });
          supervisor.run('m', 4100);
          const open: Promise<Activation>[] = [];
          const ended = new Set<Promise<Activation>>();
          for (const step of steps) {
            if ('arrive' in step) open.push(...activateTogether(gateway, 'm', step.arrive));
            else {
              // The oldest request served ends (the client read its answer).
              for (const a of open) {
                if (ended.has(a) || !(await settled(a))) continue;
                const done = await a;
                ended.add(a);
                if (done.kind === 'ready') {
                  done.claim.release();
                  break;
                }
              }
            }
            const states = await outcomes(open.filter((a) => !ended.has(a)));
            const served = states.filter((s) => s === 'ready').length;
            const waiting = states.filter((s) => s === 'waiting').length;
            expect(supervisor.inFlight('m')).toBe(served);
            expect(served).toBeLessThanOrEqual(parallel);
            expect(served + waiting).toBeLessThanOrEqual(parallel + queueLimit);
            // Nothing waits while a slot is free: llmtray's queue never holds back an idle engine.
            if (waiting > 0) expect(served).toBe(parallel);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
