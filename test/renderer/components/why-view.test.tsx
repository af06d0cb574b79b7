// @vitest-environment jsdom
import { cleanup, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { renderWithSnapshot } from '../../../renderer/src/test-fixtures/render.js';
import { placedOnTwoGpus, UNFIT_REASON, unschedulable } from '../../../renderer/src/test-fixtures/scenarios.js';
import { plan, snapshot } from '../../../renderer/src/test-fixtures/snapshot-builder.js';
import { WhyView } from '../../../renderer/src/components/why-view.js';

afterEach(cleanup);

describe('WhyView', () => {
  it("shows what the last plan launched and evicted, and the policy's reason for each model that did not fit", () => {
    renderWithSnapshot(<WhyView />, unschedulable());
    const launched = screen.getByRole('region', { name: 'Launched' });
    expect(within(launched).getAllByRole('listitem').map((item) => item.textContent)).toEqual(['coder-7b']);
    const evicted = screen.getByRole('region', { name: 'Evicted' });
    expect(within(evicted).getAllByRole('listitem').map((item) => item.textContent)).toEqual(['demo-tiny']);
    const unfit = screen.getByRole('region', { name: 'Did not fit' });
    const item = within(unfit).getByRole('listitem', { name: 'big-70b' });
    expect(within(item).getByText('refused until a pin goes or the budget grows')).toBeTruthy();
    const lines = within(item).getByRole('list', { name: 'Why big-70b did not fit' });
    expect(within(lines).getAllByRole('listitem').map((line) => line.textContent)).toEqual([
      'needs 38.2 GiB',
      '20.9 GiB budget, 14.1 GiB held by pinned demo-chat (12 GiB) and active coder-7b (2.1 GiB)',
    ]);
    // The policy's words, cut at its own clauses and nothing else.
    expect(UNFIT_REASON).toBe(within(lines).getAllByRole('listitem').map((line) => line.textContent).join('; '));
    expect(screen.getByText(/^5 s ago/)).toBeTruthy();
  });

  it('gives a reason that names several GPUs a line per GPU, and says when a model only waits for room', () => {
    const snap = placedOnTwoGpus();
    snap.plan!.unschedulable[0]!.strict = false;
    renderWithSnapshot(<WhyView />, snap);
    const item = within(screen.getByRole('region', { name: 'Did not fit' })).getByRole('listitem', { name: 'big-70b' });
    expect(within(item).getByText('waits for room')).toBeTruthy();
    expect(within(within(item).getByRole('list')).getAllByRole('listitem').map((line) => line.textContent)).toEqual([
      'needs 40 GiB',
      'GPU 0 NVIDIA GeForce RTX 4090: 23 GiB budget, 12 GiB held by pinned qwen-14b (12 GiB), 11 GiB free',
      'GPU 1 NVIDIA GeForce RTX 3060: 8 GiB budget, all free',
      'a split across mixed GPUs is off for this model (mixedSplit)',
      'part on the CPU needs host RAM, 24 GiB free',
      'it fits only if a pinned model is unpinned',
    ]);
  });

  it('says when the plan changed nothing, and when there is no plan yet', () => {
    const { unmount } = renderWithSnapshot(<WhyView />, snapshot({ plan: plan() }));
    expect(screen.getByText('Everything that is wanted fits; the plan changed nothing.')).toBeTruthy();
    expect(screen.queryByRole('region', { name: 'Did not fit' })).toBeNull();
    unmount();
    renderWithSnapshot(<WhyView />, snapshot({ plan: null }));
    expect(screen.getByRole('heading', { name: 'No plan yet' })).toBeTruthy();
  });
});
