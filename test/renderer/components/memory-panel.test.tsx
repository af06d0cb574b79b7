// @vitest-environment jsdom
import { act, cleanup, screen, within } from '@testing-library/react';
import { userEvent } from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { renderWithSnapshot } from '../../../renderer/src/test-fixtures/render.js';
import { twoGpusWithOtherProgram } from '../../../renderer/src/test-fixtures/scenarios.js';
import { budget, GiB, holder, model, NOW, snapshot } from '../../../renderer/src/test-fixtures/snapshot-builder.js';
import { MemoryPanel } from '../../../renderer/src/components/memory-panel.js';

afterEach(cleanup);

const TEN_MINUTES = 10 * 60_000;

function legend(title: string): string[] {
  return within(screen.getByRole('list', { name: `${title} memory holders` }))
    .getAllByRole('listitem')
    .map((item) => item.textContent ?? '');
}

/** Each total's term and everything said under it (its figure, and a note where there is one). */
function totals(): Record<string, string> {
  return Object.fromEntries(
    screen
      .getAllByRole('term')
      .filter((t) => t.closest('.totals'))
      .map((t) => [t.textContent, [...(t.parentElement?.querySelectorAll('dd') ?? [])].map((dd) => dd.textContent).join(' ')]),
  );
}

describe('MemoryPanel', () => {
  it('draws each GPU as segments named with their numbers, other programs included', () => {
    renderWithSnapshot(<MemoryPanel historyWindowMs={TEN_MINUTES} />, twoGpusWithOtherProgram());
    const gpu0 = screen.getByRole('group', { name: 'GPU 0 memory, 24 GiB total, 23 GiB budget' });
    expect(within(gpu0).getAllByRole('img').map((segment) => segment.getAttribute('aria-label'))).toEqual([
      'qwen-14b: 9.6 GiB (40% of the device), estimate 9.2 GiB, measured 9.6 GiB',
      'qwen-0.5b, draft of qwen-14b: 600 MiB (2% of the device)',
      'Free: 12.8 GiB (53% of the device)',
      'Reserve kept free for the driver and other programs: 1 GiB',
    ]);
    const gpu1 = screen.getByRole('group', { name: 'GPU 1 memory, 12 GiB total, 8 GiB budget' });
    expect(within(gpu1).getByRole('img', { name: 'Other programs: 3 GiB (25% of the device)' })).toBeTruthy();
    expect(within(gpu1).getByRole('img', { name: /^llama-8b: 5.5 GiB/ })).toBeTruthy();
    expect(legend('GPU 1')).toEqual(['llama-8b5.5 GiB', 'Free2.5 GiB', 'Reserve1 GiB', 'Other programs3 GiB']);
    expect(screen.getByText('NVIDIA GeForce RTX 3060')).toBeTruthy();
    expect(screen.getByText('budget 8 GiB')).toBeTruthy();
  });

  it('shows used, budget and what is left across all GPUs', () => {
    renderWithSnapshot(<MemoryPanel historyWindowMs={TEN_MINUTES} />, twoGpusWithOtherProgram());
    expect(totals()).toEqual({ Used: '15.7 GiB', Budget: '31 GiB', Left: '15.3 GiB' });
  });

  it('shows what the saved conversations take on disk beside the budget, not in it, and nothing when none is saved', () => {
    const scenario = twoGpusWithOtherProgram();
    renderWithSnapshot(<MemoryPanel historyWindowMs={TEN_MINUTES} />, { ...scenario, budget: { ...scenario.budget, savedConversationsBytes: 300 * 1024 ** 2 } });
    expect(totals()).toEqual({ Used: '15.7 GiB', Budget: '31 GiB', Left: '15.3 GiB', 'Saved conversations': '300 MiB on disk' });
  });

  it('gives exact numbers on hover and on keyboard focus', async () => {
    const user = userEvent.setup();
    renderWithSnapshot(<MemoryPanel historyWindowMs={TEN_MINUTES} />, twoGpusWithOtherProgram());
    const others = screen.getByRole('img', { name: /^Other programs/ });
    await user.hover(others);
    const tip = screen.getByRole('tooltip');
    expect(tip.textContent).toContain('3,221,225,472 bytes');
    expect(others.getAttribute('aria-describedby')).toBe(tip.id);
    await user.unhover(others);
    expect(screen.queryByRole('tooltip')).toBeNull();

    await user.tab();
    expect(document.activeElement?.getAttribute('aria-label')).toMatch(/^qwen-14b: 9.6 GiB/);
    expect(screen.getByRole('tooltip').textContent).toContain('qwen-14b');
    expect(screen.getByRole('tooltip').textContent).toContain('10,307,921,510 bytes');
  });

  it("draws host RAM when there is no GPU, from the budget's holders", () => {
    const snap = snapshot({
      models: [
        model('demo-chat', { draftId: 'demo-draft', measuredBytes: 5 * GiB, status: { state: 'ready', level: 'minimal' } }, 6),
        model('demo-tiny', { status: { state: 'idle' } }, 1),
      ],
      budget: budget([], { usedBytes: 5.5 * GiB, holders: [holder('model', 'demo-chat', 5 * GiB), holder('draft', 'demo-draft', 0.5 * GiB)] }),
    });
    renderWithSnapshot(<MemoryPanel historyWindowMs={TEN_MINUTES} />, snap);
    expect(screen.getByText('CPU only')).toBeTruthy();
    expect(legend('Host memory')).toEqual(['demo-chat5 GiB', 'demo-draft draft512 MiB', 'Free40 GiB', 'Other programs18.5 GiB']);
  });

  it('draws the warm spare after the models, named as what it is', () => {
    const MiB = 1024 ** 2;
    const snap = snapshot({
      models: [model('demo-tiny', { status: { state: 'ready', level: 'full' } }, 0.1)],
      budget: budget([], {
        budgetBytes: 400 * MiB,
        limitBytes: 400 * MiB,
        usedBytes: 206 * MiB,
        holders: [holder('model', 'demo-tiny', 106 * MiB), { kind: 'spare', modelId: null, bytes: 100 * MiB }],
      }),
    });
    renderWithSnapshot(<MemoryPanel historyWindowMs={TEN_MINUTES} />, snap);
    expect(legend('Host memory')).toEqual(['demo-tiny106 MiB', 'Warm spare100 MiB', 'Free194 MiB']);
    expect(screen.getByRole('img', { name: /^Warm spare engine, no model yet/ })).toBeTruthy();
  });

  it('draws the budget itself when a configured limit caps it far below host RAM', () => {
    const MiB = 1024 ** 2;
    const snap = snapshot({
      models: [model('demo-chat', { draftId: 'demo-draft', status: { state: 'ready', level: 'full' } }, 0.2)],
      budget: budget([], {
        budgetBytes: 210 * MiB,
        limitBytes: 210 * MiB,
        usedBytes: 197 * MiB,
        holders: [holder('model', 'demo-chat', 154 * MiB), holder('draft', 'demo-draft', 43 * MiB)],
      }),
    });
    renderWithSnapshot(<MemoryPanel historyWindowMs={TEN_MINUTES} />, snap);
    expect(legend('Host memory')).toEqual(['demo-chat154 MiB', 'demo-draft draft43 MiB', 'Free13 MiB']);
    // Its own line, whole: on the title's line it was cut to "No GPU: models ru…".
    const subtitle = screen.getByText(/^No GPU: models run on the CPU/);
    expect(subtitle.textContent).toBe("No GPU: models run on the CPU, within the config's limit (the machine has 64 GiB)");
    expect(subtitle.closest('.device-head')).toBeNull();
    // The budget is the limit: the number once, and what it is.
    expect(totals()).toEqual({ Used: '197 MiB', Budget: "210 MiB set by the config's limit", Left: '13 MiB' });
  });

  it("names each GPU as the engine does, and says why a GPU's figures are held", () => {
    const base = twoGpusWithOtherProgram();
    const [first, second] = base.budget.gpus;
    const warning = 'Not measured for 3 samples in a row (4 s): nvidia-smi answered before and gives no figures now. Its budget is held at the last good sample.';
    const gpus = [
      { ...first!, name: 'NVIDIA GeForce RTX 4070', engineDevice: 'CUDA0' },
      { ...second!, engineDevice: 'CUDA1', warning },
    ];
    renderWithSnapshot(<MemoryPanel historyWindowMs={TEN_MINUTES} />, { ...base, budget: { ...base.budget, gpus } });
    expect(screen.getByText('NVIDIA GeForce RTX 4070 (CUDA0)')).toBeTruthy();
    expect(screen.getByText('NVIDIA GeForce RTX 3060 (CUDA1)')).toBeTruthy();
    expect(screen.getAllByRole('alert').map((alert) => alert.textContent)).toEqual([warning]);
  });

  it('lists the display controllers it numbers nowhere', () => {
    const base = twoGpusWithOtherProgram();
    const displays = [{ name: 'ASPEED Graphics Family', busAddress: '0000:02:00.0' }];
    renderWithSnapshot(<MemoryPanel historyWindowMs={TEN_MINUTES} />, { ...base, budget: { ...base.budget, displays } });
    expect(screen.getByText(/^Display controllers no engine computes on/).textContent).toBe(
      'Display controllers no engine computes on, not numbered or counted: ASPEED Graphics Family (0000:02:00.0)',
    );
  });

  it('names a limit the machine does not reach by its number', () => {
    const base = twoGpusWithOtherProgram();
    renderWithSnapshot(<MemoryPanel historyWindowMs={TEN_MINUTES} />, { ...base, budget: { ...base.budget, limitBytes: 40 * GiB } });
    expect(totals().Budget).toBe("31 GiB below the config's limit of 40 GiB");
  });

  it('keeps a history of used versus budget from the snapshots it receives', () => {
    const first = twoGpusWithOtherProgram();
    const { bridge } = renderWithSnapshot(<MemoryPanel historyWindowMs={TEN_MINUTES} />, {
      ...first,
      budget: { ...first.budget, sampledAt: NOW - 120_000, usedBytes: 20 * GiB },
    });
    act(() => bridge.emit({ type: 'SnapshotUpdated', snapshot: { ...first, budget: { ...first.budget, usedBytes: 10 * GiB } } }));
    const chart = screen.getByRole('img', { name: /^Memory over the last 10 min/ });
    expect(chart.getAttribute('aria-label')).toBe('Memory over the last 10 min: 10 GiB used of a 31 GiB budget now; peak 20 GiB.');
  });
});
