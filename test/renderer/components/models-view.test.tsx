// @vitest-environment jsdom
import { act, cleanup, screen, waitFor, within } from '@testing-library/react';
import { userEvent } from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reasonLines } from '../../../core/contracts/snapshot-words.js';
import {
  CORRUPT_MODEL_ERROR,
  degradedToCpu,
  emptyCatalog,
  fallbackServing,
  loading,
  partlyOnCpu,
  placedOnTwoGpus,
  quarantined,
  twoGpusWithOtherProgram,
  UNFIT_TWO_GPUS_REASON,
  UNKNOWN_ARCH_ERROR,
} from '../../../renderer/src/test-fixtures/scenarios.js';
import { renderWithSnapshot } from '../../../renderer/src/test-fixtures/render.js';
import { budget, holder, MiB, model, NOW, snapshot } from '../../../renderer/src/test-fixtures/snapshot-builder.js';
import { ModelsView } from '../../../renderer/src/components/models-view.js';

afterEach(cleanup);

function row(name: string): HTMLElement {
  return screen.getByRole('listitem', { name });
}

describe('ModelsView', () => {
  it('shows a model degraded to the CPU with its level, the reason and its measured footprint', () => {
    renderWithSnapshot(<ModelsView />, degradedToCpu());
    const chat = row('demo-chat');
    expect(within(chat).getByText('Degraded')).toBeTruthy();
    expect(within(chat).getByText('CPU only')).toBeTruthy();
    expect(within(chat).getByText(/running on the CPU after 3 out-of-memory failures/)).toBeTruthy();
    expect(within(chat).getByText(/measured 5.1 GiB/)).toBeTruthy();
    expect(within(chat).getByRole('button', { name: 'Recovery details for demo-chat' })).toBeTruthy();
  });

  it('shows a model partly on the CPU with its level and only the GPU share of its footprint', () => {
    renderWithSnapshot(<ModelsView />, partlyOnCpu());
    const chat = row('demo-chat');
    expect(within(chat).getByText('Part on CPU')).toBeTruthy();
    // The fixture's 6 GiB model is estimated at 2.4 GiB on the device at partial.
    expect(within(chat).getByText('Footprint').nextSibling?.textContent).toBe('2.4 GiB on the GPU, the rest in RAM');
  });

  it("says a model's limits on requests where the config sets them, and nothing where it sets none", () => {
    renderWithSnapshot(
      <ModelsView />,
      snapshot({ models: [model('demo-chat', { inFlight: 1, limits: { parallel: 1, queueLimit: 1 } }), model('demo-tiny', { limits: { queueLimit: 0 } }), model('free')] }),
    );
    expect(within(row('demo-chat')).getByText('Limits').nextSibling?.textContent).toBe('parallel 1, queueLimit 1');
    expect(within(row('demo-tiny')).getByText('Limits').nextSibling?.textContent).toBe('queueLimit 0');
    expect(within(row('free')).queryByText('Limits')).toBeNull();
  });

  it('says which model answers for one in fallback, on both cards', () => {
    renderWithSnapshot(<ModelsView />, fallbackServing());
    expect(within(row('demo-chat')).getByText('Answered by demo-tiny')).toBeTruthy();
    const tiny = row('demo-tiny');
    // Why unloading demo-tiny does not make it go: demo-chat's want keeps it.
    expect(within(tiny).getByText('Answers for demo-chat, in fallback: it stays loaded while demo-chat is wanted')).toBeTruthy();
    expect(within(tiny).getByText('Decoding')).toBeTruthy();
    expect(within(tiny).getByText('In flight').nextSibling?.textContent).toBe('1');
    expect(within(tiny).getByText('2 s ago')).toBeTruthy();
  });

  it("shows load progress in the tray's words: the fraction, the elapsed time, and the phase", () => {
    renderWithSnapshot(<ModelsView />, loading());
    const progress = screen.getByRole('progressbar', { name: 'Loading demo-chat' }) as HTMLProgressElement;
    expect(progress.value).toBeCloseTo(0.42);
    expect(screen.getByText('loading 42 %, 12 s · loading weights')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Unload demo-chat' })).toBeTruthy();
  });

  it('counts the first seconds of a load in tenths, as the clock moves', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const snap = loading();
      snap.models[0]!.loading = { fraction: 0.4, startedAt: NOW - 1_200, expectedMs: null };
      let now = NOW;
      renderWithSnapshot(<ModelsView />, snap, { now: () => now });
      expect(screen.getByText('loading 40 %, 1.2 s · loading weights')).toBeTruthy();
      now = NOW + 1_000;
      act(() => vi.advanceTimersByTime(1000));
      expect(screen.getByText('loading 40 %, 2.2 s · loading weights')).toBeTruthy();
    } finally {
      vi.useRealTimers();
    }
  });

  it('estimates from the last load when the engine reports no fraction, marked as an estimate, bar and words alike', () => {
    const snap = loading();
    snap.models[0]!.loading = { fraction: null, startedAt: NOW - 1_000, expectedMs: 4_000 };
    renderWithSnapshot(<ModelsView />, snap, { now: () => NOW });
    expect(screen.getByText('loading ~25 %, 1.0 s · loading weights')).toBeTruthy();
    expect((screen.getByRole('progressbar', { name: 'Loading demo-chat' }) as HTMLProgressElement).value).toBe(0.25);
  });

  it('shows an indeterminate bar and the elapsed time when the engine reports no fraction and it never loaded', () => {
    const snap = loading();
    snap.models[0]!.loading = { fraction: null, startedAt: snap.models[0]!.loading!.startedAt - 60_000, expectedMs: null };
    renderWithSnapshot(<ModelsView />, snap);
    const progress = screen.getByRole('progressbar', { name: 'Loading demo-chat' });
    expect(progress.hasAttribute('value')).toBe(false);
    expect(screen.getByText('loading, 1 min 12 s · loading weights')).toBeTruthy();
  });

  it("shows a quarantined model's llama.cpp reason on its card, with Retry in place of Load", async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<ModelsView />, quarantined());
    const card = row('demo-broken');
    const why = within(card).getByRole('group', { name: 'Why demo-broken is quarantined' });
    // Short enough to show whole: nothing to expand.
    expect(why.textContent).toBe(`Cannot be loaded (bad file): ${CORRUPT_MODEL_ERROR}`);
    expect(within(why).queryByRole('button')).toBeNull();
    expect(within(card).queryByRole('button', { name: 'Load demo-broken' })).toBeNull();
    await user.click(within(card).getByRole('button', { name: 'Retry demo-broken' }));
    expect(bridge.commands).toEqual([{ command: 'retry', modelId: 'demo-broken' }]);
  });

  it('shortens a long reason on the card and shows the whole of it a click away', async () => {
    const user = userEvent.setup();
    const snap = quarantined();
    snap.models[0]!.status.recovery.lastError = UNKNOWN_ARCH_ERROR;
    renderWithSnapshot(<ModelsView />, snap);
    const why = within(row('demo-broken')).getByRole('group', { name: 'Why demo-broken is quarantined' });
    expect(why.textContent).toMatch(/^Cannot be loaded \(bad file\): llama_model_load: error loading model: .*'kev' More$/);
    const more = within(why).getByRole('button', { name: 'Full reason for demo-broken' });
    expect(more.getAttribute('aria-expanded')).toBe('false');
    await user.click(more);
    expect(more.getAttribute('aria-expanded')).toBe('true');
    const full = document.getElementById(more.getAttribute('aria-controls') ?? '');
    expect(full?.textContent).toBe(UNKNOWN_ARCH_ERROR);
    await user.click(more);
    expect(document.getElementById(more.getAttribute('aria-controls') ?? '')).toBeNull();
  });

  it('offers Retry next to Unload for a model the ladder degraded, and a retry in flight disables both', async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<ModelsView />, placedOnTwoGpus(), {
      setUp: (b) => (b.answer = () => new Promise(() => {})),
    });
    const card = row('mixtral');
    expect(within(card).getByRole('group', { name: 'Why mixtral failed' }).textContent).toMatch(/^Out of memory: ggml_backend_cuda/);
    await user.click(within(card).getByRole('button', { name: 'Retry mixtral' }));
    expect(bridge.commands).toEqual([{ command: 'retry', modelId: 'mixtral' }]);
    expect(within(card).getByRole('button', { name: 'Retry mixtral' }).textContent).toBe('Retrying…');
    expect((within(card).getByRole('button', { name: 'Unload mixtral' }) as HTMLButtonElement).disabled).toBe(true);
  });

  it("gives a left-out model's reason on its card, a line per GPU", () => {
    renderWithSnapshot(<ModelsView />, placedOnTwoGpus());
    const lines = within(row('big-70b')).getByRole('list', { name: 'Why big-70b was left out' });
    expect(within(lines).getAllByRole('listitem').map((item) => item.textContent)).toEqual(reasonLines(UNFIT_TWO_GPUS_REASON));
    expect(within(lines).getByText('GPU 1 NVIDIA GeForce RTX 3060: 8 GiB budget, all free')).toBeTruthy();
  });

  it('says where each resident model is placed on the GPUs, and nothing of the kind without one', () => {
    const { unmount } = renderWithSnapshot(<ModelsView />, placedOnTwoGpus());
    const placement = (id: string) => within(row(id)).queryByText('Placement')?.nextSibling?.textContent ?? null;
    expect(placement('qwen-14b')).toBe('split over GPU 0 + 1, 30/18 layers');
    expect(placement('mixtral')).toBe('partial: 20 of 32 layers on GPU 0, 6.2 GiB in RAM');
    expect(placement('big-70b')).toBeNull();
    unmount();
    const cpu = placedOnTwoGpus();
    renderWithSnapshot(<ModelsView />, { ...cpu, budget: budget([]) });
    expect(placement('qwen-14b')).toBeNull();
  });

  it('pins and unpins through the bridge', async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<ModelsView />, twoGpusWithOtherProgram());
    const pinned = screen.getByRole('switch', { name: 'Pin qwen-14b' }) as HTMLInputElement;
    const unpinned = screen.getByRole('switch', { name: 'Pin llama-8b' }) as HTMLInputElement;
    expect(pinned.checked).toBe(true);
    expect(unpinned.checked).toBe(false);
    await user.click(unpinned);
    await user.click(pinned);
    expect(bridge.commands).toEqual([
      { command: 'pin', modelId: 'llama-8b' },
      { command: 'unpin', modelId: 'qwen-14b' },
    ]);
  });

  it('offers Load for an idle model and Unload for a resident one, and disables them while a command runs', async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<ModelsView />, twoGpusWithOtherProgram());
    let finish: () => void = () => {};
    bridge.answer = (command, modelId) =>
      new Promise((resolve) => {
        finish = () => resolve({ ok: true, message: `${command} ${modelId}` });
      });
    await user.click(screen.getByRole('button', { name: 'Load qwen-0.5b' }));
    expect(bridge.commands).toEqual([{ command: 'load', modelId: 'qwen-0.5b' }]);
    expect((screen.getByRole('button', { name: 'Load qwen-0.5b' }) as HTMLButtonElement).disabled).toBe(true);
    expect((screen.getByRole('switch', { name: 'Pin qwen-0.5b' }) as HTMLInputElement).disabled).toBe(true);
    expect((screen.getByRole('button', { name: 'Unload llama-8b' }) as HTMLButtonElement).disabled).toBe(false);
    finish();
    await waitFor(() => expect((screen.getByRole('button', { name: 'Load qwen-0.5b' }) as HTMLButtonElement).disabled).toBe(false));
    await user.click(screen.getByRole('button', { name: 'Unload llama-8b' }));
    expect(bridge.commands.at(-1)).toEqual({ command: 'unload', modelId: 'llama-8b' });
  });

  it('shows the draft pair, the footprint estimate and when each model was last used', () => {
    renderWithSnapshot(<ModelsView />, twoGpusWithOtherProgram());
    const qwen = row('qwen-14b');
    expect(within(qwen).getByText('Draft').nextSibling?.textContent).toBe('qwen-0.5b');
    expect(within(qwen).getByText('Footprint').nextSibling?.textContent).toBe('9.2 GiB · measured 9.6 GiB');
    expect(within(row('llama-8b')).getByText('1 min ago')).toBeTruthy();
    // qwen-14b itself was never used: its draft, in its engine, neither.
    expect(within(row('qwen-0.5b')).getByText('never')).toBeTruthy();
  });

  it('shows a draft loaded in its target\'s engine as drafting for it, busy and last used with it, not idle', () => {
    const chat = model('demo-chat', { draftId: 'demo-draft', inFlight: 1, lastUsed: NOW - 2_000, status: { state: 'active', level: 'full' } }, 0.15);
    const draftModel = model('demo-draft', {}, 0.1);
    renderWithSnapshot(
      <ModelsView />,
      snapshot({
        models: [chat, draftModel],
        budget: budget([], { holders: [holder('model', 'demo-chat', 155 * MiB), holder('draft', 'demo-draft', 16 * MiB)], usedBytes: 171 * MiB }),
      }),
    );
    const draft = row('demo-draft');
    expect(within(draft).queryByText('Idle')).toBeNull();
    expect(within(draft).getByText('Drafting').getAttribute('data-state')).toBe('drafting');
    expect(within(draft).getByText("Drafting for demo-chat, inside its engine: in use whenever demo-chat is")).toBeTruthy();
    expect(within(draft).getByText('Footprint').nextSibling?.textContent).toBe('16 MiB in the engine of demo-chat');
    expect(within(draft).getByText('In flight').nextSibling?.textContent).toBe('1');
    expect(within(draft).getByText('Last used').nextSibling?.textContent).toBe('2 s ago');
  });

  it('shows the requests waiting for a model beside those in flight, only while some wait', () => {
    renderWithSnapshot(<ModelsView />, snapshot({ models: [model('busy', { inFlight: 2, waiting: 3, status: { state: 'active', level: 'full' } }), model('calm')], budget: budget([]) }));
    expect(within(row('busy')).getByText('In flight').nextSibling?.textContent).toBe('2');
    expect(within(row('busy')).getByText('Waiting').nextSibling?.textContent).toBe('3');
    expect(within(row('calm')).queryByText('Waiting')).toBeNull();
  });

  it('shows a draft whose target is not loaded as idle, with its own figures', () => {
    renderWithSnapshot(<ModelsView />, snapshot({ models: [model('demo-chat', { draftId: 'demo-draft' }), model('demo-draft', {}, 0.1)], budget: budget([]) }));
    const draft = row('demo-draft');
    expect(within(draft).getByText('Idle')).toBeTruthy();
    expect(within(draft).queryByText('Drafting')).toBeNull();
    expect(within(draft).getByText('Last used').nextSibling?.textContent).toBe('never');
  });

  it('shows the conversations a model keeps on disk, on its card only, and nothing for one that keeps none', () => {
    renderWithSnapshot(
      <ModelsView />,
      snapshot({
        models: [
          model('evicted-chat', { savedConversations: { count: 2, bytes: 3 * 1024 ** 2 } }),
          model('fresh', { savedConversations: { count: 0, bytes: 0 } }),
        ],
      }),
    );
    expect(within(row('evicted-chat')).getByText('Saved conversations').nextSibling?.textContent).toBe('2 conversations · 3 MiB on disk');
    expect(within(row('fresh')).queryByText('Saved conversations')).toBeNull();
  });

  it('shows a catalog error on the model it concerns', () => {
    renderWithSnapshot(
      <ModelsView />,
      snapshot({ models: [model('ghost', { catalogError: 'The file /home/ada/models/ghost.gguf does not exist.' })] }),
    );
    expect(within(row('ghost')).getByText('The file /home/ada/models/ghost.gguf does not exist.')).toBeTruthy();
  });

  it('shows where models come from when the catalog is empty', () => {
    renderWithSnapshot(<ModelsView />, emptyCatalog());
    expect(screen.getByRole('heading', { name: 'No models yet' })).toBeTruthy();
    const folders = screen.getByRole('list', { name: 'Folders scanned for models' });
    expect(within(folders).getAllByRole('listitem').map((item) => item.textContent)).toEqual([
      '/home/ada/models',
      '/home/ada/.cache/lm-studio/models',
    ]);
    expect(screen.getByText('/home/ada/.config/llmtray/config.yaml')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Copy config file path' })).toBeTruthy();
  });
});
