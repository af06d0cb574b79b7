// @vitest-environment jsdom
import { cleanup, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { renderWithSnapshot } from '../test-fixtures/render.js';
import { UNFIT_REASON, unschedulable } from '../test-fixtures/scenarios.js';
import { plan, snapshot } from '../test-fixtures/snapshot-builder.js';
import { WhyView } from './why-view.js';

afterEach(cleanup);

describe('WhyView', () => {
  it("shows what the last plan launched and evicted, and the policy's reason for each model that did not fit", () => {
    renderWithSnapshot(<WhyView />, unschedulable());
    const launched = screen.getByRole('region', { name: 'Launched' });
    expect(within(launched).getAllByRole('listitem').map((item) => item.textContent)).toEqual(['coder-7b']);
    const evicted = screen.getByRole('region', { name: 'Evicted' });
    expect(within(evicted).getAllByRole('listitem').map((item) => item.textContent)).toEqual(['demo-tiny']);
    const unfit = screen.getByRole('region', { name: 'Did not fit' });
    const item = within(unfit).getByRole('listitem');
    expect(within(item).getByText('big-70b')).toBeTruthy();
    expect(within(item).getByText(UNFIT_REASON)).toBeTruthy();
    expect(screen.getByText(/^5 s ago/)).toBeTruthy();
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
