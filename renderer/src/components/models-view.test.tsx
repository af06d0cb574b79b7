// @vitest-environment jsdom
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import { userEvent } from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { degradedToCpu, emptyCatalog, fallbackServing, loading, partlyOnCpu, twoGpusWithOtherProgram } from '../test-fixtures/scenarios.js';
import { renderWithSnapshot } from '../test-fixtures/render.js';
import { model, snapshot } from '../test-fixtures/snapshot-builder.js';
import { ModelsView } from './models-view.js';

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

  it('says which model answers for one in fallback', () => {
    renderWithSnapshot(<ModelsView />, fallbackServing());
    expect(within(row('demo-chat')).getByText('Answered by demo-tiny')).toBeTruthy();
    const tiny = row('demo-tiny');
    expect(within(tiny).getByText('Decoding')).toBeTruthy();
    expect(within(tiny).getByText('In flight').nextSibling?.textContent).toBe('1');
    expect(within(tiny).getByText('2 s ago')).toBeTruthy();
  });

  it('shows load progress with the fraction, the elapsed time and the phase', () => {
    renderWithSnapshot(<ModelsView />, loading());
    const progress = screen.getByRole('progressbar', { name: 'Loading demo-chat' }) as HTMLProgressElement;
    expect(progress.value).toBeCloseTo(0.42);
    expect(screen.getByText('42% · 12 s elapsed · loading weights')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Unload demo-chat' })).toBeTruthy();
  });

  it('shows an indeterminate bar and the elapsed time when the engine reports no fraction', () => {
    const snap = loading();
    snap.models[0]!.loading = { fraction: null, startedAt: snap.models[0]!.loading!.startedAt - 60_000 };
    renderWithSnapshot(<ModelsView />, snap);
    const progress = screen.getByRole('progressbar', { name: 'Loading demo-chat' });
    expect(progress.hasAttribute('value')).toBe(false);
    expect(screen.getByText('1 min 12 s elapsed · loading weights')).toBeTruthy();
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
    expect(within(row('qwen-0.5b')).getByText('never')).toBeTruthy();
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
