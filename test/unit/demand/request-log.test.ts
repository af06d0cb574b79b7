import { describe, expect, it } from 'vitest';
import { RequestLog } from '../../../core/demand/request-log.js';
import type { RequestRecord } from '../../../core/contracts/requests/request-record.js';
import { requestRecord } from '../../support/request-records.js';

const ids = (records: readonly RequestRecord[]): string[] => records.map((r) => r.id);

describe('RequestLog', () => {
  it('lists the newest first and drops the oldest once it holds keep records', () => {
    const log = new RequestLog(3);
    const made = [1, 2, 3, 4, 5].map((n) => requestRecord({ id: `q${n}` }));
    made.slice(0, 2).forEach((r) => log.add(r));
    expect(ids(log.list())).toEqual(['q2', 'q1']);
    made.slice(2).forEach((r) => log.add(r));
    expect(ids(log.list())).toEqual(['q5', 'q4', 'q3']);
    expect(ids(log.list({}, 2))).toEqual(['q5', 'q4']);
  });

  it('filters by the model asked for or the one that answered, by status code or class, and by client', () => {
    const log = new RequestLog(10);
    log.add(requestRecord({ id: 'ok', model: 'big', servedBy: 'big', client: 'editor' }));
    log.add(requestRecord({ id: 'fellBack', model: 'big', servedBy: 'small', client: 'agent' }));
    log.add(requestRecord({ id: 'limited', model: 'small', servedBy: null, status: 429, client: 'agent' }));
    log.add(requestRecord({ id: 'broken', model: 'small', servedBy: 'small', status: 502, client: 'local' }));
    expect(ids(log.list({ model: 'big' }))).toEqual(['fellBack', 'ok']);
    expect(ids(log.list({ model: 'small' }))).toEqual(['broken', 'limited', 'fellBack']);
    expect(ids(log.list({ status: '429' }))).toEqual(['limited']);
    expect(ids(log.list({ status: '4xx' }))).toEqual(['limited']);
    expect(ids(log.list({ status: '5xx' }))).toEqual(['broken']);
    expect(ids(log.list({ status: '2xx', client: 'agent' }))).toEqual(['fellBack']);
    expect(ids(log.list({ client: 'nobody' }))).toEqual([]);
  });

  it('tells each record to its listeners as it is added', () => {
    const log = new RequestLog(2);
    const told: string[] = [];
    const unsubscribe = log.onRecorded((record) => told.push(record.id));
    log.add(requestRecord({ id: 'a' }));
    unsubscribe();
    log.add(requestRecord({ id: 'b' }));
    expect(told).toEqual(['a']);
  });

  it('keeps the newest records across a resize, smaller or larger, and goes on in order', () => {
    const log = new RequestLog(4);
    for (const n of [1, 2, 3, 4, 5, 6]) log.add(requestRecord({ id: `q${n}` }));
    log.resize(2);
    expect(log.keep).toBe(2);
    expect(ids(log.list())).toEqual(['q6', 'q5']);
    log.resize(5);
    log.add(requestRecord({ id: 'q7' }));
    expect(ids(log.list())).toEqual(['q7', 'q6', 'q5']);
    for (const n of [8, 9, 10]) log.add(requestRecord({ id: `q${n}` }));
    expect(ids(log.list())).toEqual(['q10', 'q9', 'q8', 'q7', 'q6']);
  });

  it('holds at least one record', () => {
    const log = new RequestLog(0);
    log.add(requestRecord({ id: 'a' }));
    log.add(requestRecord({ id: 'b' }));
    expect(ids(log.list())).toEqual(['b']);
  });
});
