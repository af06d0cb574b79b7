// @vitest-environment jsdom
import { act, cleanup, screen, within } from '@testing-library/react';
import { userEvent } from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { renderWithSnapshot } from '../../../renderer/src/test-fixtures/render.js';
import { CORRUPT_MODEL_ERROR, CUDA_OOM_ERROR, fallbackServing, quarantined, retrying, twoGpusWithOtherProgram } from '../../../renderer/src/test-fixtures/scenarios.js';
import { NOW } from '../../../renderer/src/test-fixtures/snapshot-builder.js';
import { RecoveryView } from '../../../renderer/src/components/recovery-view.js';

afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

function facts(card: HTMLElement): Record<string, string> {
  const out: Record<string, string> = {};
  for (const term of within(card).getAllByRole('term')) out[term.textContent ?? ''] = term.nextElementSibling?.textContent ?? '';
  return out;
}

describe('RecoveryView', () => {
  it('shows a quarantined model with its failure, attempts, last error in full, and a Retry that calls the bridge', async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<RecoveryView />, quarantined());
    const card = screen.getByRole('listitem', { name: 'demo-broken' });
    expect(within(card).getByText('Quarantined')).toBeTruthy();
    expect(facts(card)).toEqual({
      Failure: 'Cannot be loaded (bad file)',
      Attempts: '1',
      Next: 'Quarantine until you retry',
      When: 'Not scheduled',
    });
    expect(within(card).getByText(CORRUPT_MODEL_ERROR)).toBeTruthy();
    await user.click(within(card).getByRole('button', { name: 'Retry demo-broken' }));
    expect(bridge.commands).toEqual([{ command: 'retry', modelId: 'demo-broken' }]);
  });

  it('counts down to the next attempt as the clock moves', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    let now = NOW;
    renderWithSnapshot(<RecoveryView />, retrying(), { now: () => now });
    const card = (): HTMLElement => screen.getByRole('listitem', { name: 'demo-broken' });
    expect(facts(card())).toMatchObject({ Failure: 'Crashed', Attempts: '2', Next: 'Retry unchanged', When: 'in 4 s' });
    expect(within(card()).queryByRole('button', { name: /Retry/ })).toBeNull();
    now = NOW + 2_500;
    act(() => vi.advanceTimersByTime(1000));
    expect(facts(card()).When).toBe('in 2 s');
    now = NOW + 4_000;
    act(() => vi.advanceTimersByTime(1000));
    expect(facts(card()).When).toBe('Now');
  });

  it('lists a model answered by its fallback with who answers and a Retry', () => {
    renderWithSnapshot(<RecoveryView />, fallbackServing());
    const card = screen.getByRole('listitem', { name: 'demo-chat' });
    expect(within(card).getByText('Requests for demo-chat are answered by demo-tiny.')).toBeTruthy();
    expect(within(card).getByText(CUDA_OOM_ERROR)).toBeTruthy();
    expect(facts(card).Failure).toBe('Out of memory');
    expect(within(card).getByRole('button', { name: 'Retry demo-chat' })).toBeTruthy();
    expect(screen.queryByRole('listitem', { name: 'demo-tiny' })).toBeNull();
  });

  it('says nothing is failing when every model is healthy', () => {
    renderWithSnapshot(<RecoveryView />, twoGpusWithOtherProgram());
    expect(screen.getByRole('heading', { name: 'Nothing is failing' })).toBeTruthy();
  });
});
