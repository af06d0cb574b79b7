// @vitest-environment jsdom
import { act, cleanup, screen, waitFor, within } from '@testing-library/react';
import { userEvent } from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { renderWithSnapshot } from '../../../renderer/src/test-fixtures/render.js';
import { twoGpusWithOtherProgram } from '../../../renderer/src/test-fixtures/scenarios.js';
import { ActivityView } from '../../../renderer/src/components/activity-view.js';
import { requestRecord } from '../../support/request-records.js';

afterEach(cleanup);

const requestsTable = () => screen.getByRole('table', { name: 'Requests' });
/** The request ids in the table's order (each row carries its record's id). */
const rowIds = (): string[] => within(requestsTable()).getAllByRole('row').slice(1).map((row) => row.getAttribute('data-request-id') ?? '');

const older = requestRecord({ id: 'r1', at: 1_000, model: 'qwen-14b', servedBy: 'qwen-14b', firstTokenMs: 120, tokensPerSecond: 40, durationMs: 900 });
const cold = requestRecord({ id: 'r2', at: 2_000, model: 'qwen-14b', servedBy: 'qwen-14b', waited: 'load', waitMs: 4200, firstTokenMs: 4500, promptTokens: 31, cachedTokens: 24, completionTokens: 12, tokensPerSecond: 35, durationMs: 4800 });
const limited = requestRecord({ id: 'r3', at: 3_000, model: 'qwen-14b', servedBy: null, status: 429, firstTokenMs: null, promptTokens: null, cachedTokens: null, completionTokens: null, tokensPerSecond: null, durationMs: 2, error: "Model 'qwen-14b' has its queueLimit of 1 waiting" });

describe('ActivityView', () => {
  it('lists the requests newest first with what each waited for and cost, and a summary per model', async () => {
    renderWithSnapshot(<ActivityView />, twoGpusWithOtherProgram(), { setUp: (b) => (b.requests = [limited, cold, older]) });
    await waitFor(() => expect(rowIds()).toEqual(['r3', 'r2', 'r1']));
    const coldRow = within(requestsTable()).getAllByRole('row')[2]!;
    expect(coldRow.textContent).toContain('load 4.2 s');
    expect(coldRow.textContent).toContain('31 → 12 (24 cached)');
    expect(coldRow.textContent).toContain('35.0 tok/s');
    expect(within(requestsTable()).getAllByRole('row')[1]!.textContent).toContain('its queueLimit of 1 waiting');
    const summary = within(screen.getByRole('table', { name: 'Requests per model' })).getAllByRole('row')[1]!;
    // 3 requests, 1 failed, first token p50/p95 over the two that had one, median speed.
    expect([...summary.children].map((cell) => cell.textContent)).toEqual(['qwen-14b', '3', '1', '120 ms', '4.5 s', '35.0 tok/s']);
    expect(screen.getByText(/Bodies are not kept/)).toBeTruthy();
  });

  it('puts each request that ends in front as it is recorded, once even when it came during the fetch', async () => {
    const { bridge, store } = renderWithSnapshot(<ActivityView />, twoGpusWithOtherProgram(), { setUp: (b) => (b.requests = [older]) });
    // While the list is being fetched: one record the answer holds as well, and one it does not.
    expect(store.getState().requests).toBeNull();
    act(() => bridge.emit({ type: 'RequestRecorded', record: older }));
    act(() => bridge.emit({ type: 'RequestRecorded', record: cold }));
    await waitFor(() => expect(rowIds()).toEqual(['r2', 'r1']));
    act(() => bridge.emit({ type: 'RequestRecorded', record: limited }));
    expect(rowIds()).toEqual(['r3', 'r2', 'r1']);
  });

  it('sorts by the column a person clicks, the other way on a second click, unknown values last', async () => {
    const user = userEvent.setup();
    renderWithSnapshot(<ActivityView />, twoGpusWithOtherProgram(), { setUp: (b) => (b.requests = [limited, cold, older]) });
    await waitFor(() => expect(rowIds()).toHaveLength(3));
    await user.click(screen.getByRole('button', { name: 'First token' }));
    expect(rowIds()).toEqual(['r2', 'r1', 'r3']);
    expect(within(requestsTable()).getByRole('columnheader', { name: /First token/ }).getAttribute('aria-sort')).toBe('descending');
    await user.click(screen.getByRole('button', { name: 'First token' }));
    expect(rowIds()).toEqual(['r1', 'r2', 'r3']);
    expect(within(requestsTable()).getByRole('columnheader', { name: /First token/ }).getAttribute('aria-sort')).toBe('ascending');
  });

  it('says where bodies are kept, and shows them under each request', async () => {
    const withBodies = requestRecord({ id: 'r9', bodies: { request: '{"model":"qwen-14b"}', answer: 'data: {"choices":[]}', truncated: true } });
    renderWithSnapshot(<ActivityView />, twoGpusWithOtherProgram(), {
      setUp: (b) => {
        b.requests = [withBodies];
        b.keepBodiesBytes = 65_536;
      },
    });
    await waitFor(() => expect(rowIds()).toEqual(['r9']));
    expect(screen.getByText(/The first 64 KiB of each request's body and of its answer are kept/)).toBeTruthy();
    expect(screen.getByText('Bodies (cut)')).toBeTruthy();
    expect(screen.getByText('{"model":"qwen-14b"}')).toBeTruthy();
  });

  it('says so when there are no requests yet', async () => {
    renderWithSnapshot(<ActivityView />, twoGpusWithOtherProgram());
    expect(await screen.findByText('No requests yet')).toBeTruthy();
  });
});
