// @vitest-environment jsdom
import { act, cleanup, screen, waitFor } from '@testing-library/react';
import { userEvent } from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { renderWithSnapshot } from '../../../renderer/src/test-fixtures/render.js';
import { twoGpusWithOtherProgram } from '../../../renderer/src/test-fixtures/scenarios.js';
import { NOW } from '../../../renderer/src/test-fixtures/snapshot-builder.js';
import { LogsView } from '../../../renderer/src/components/logs-view.js';

afterEach(cleanup);

const QWEN_LOG = [
  'llama_model_loader: loaded meta data with 29 key-value pairs and 579 tensors from qwen-14b.gguf',
  'load_tensors: offloaded 49/49 layers to GPU',
  'srv  llama_server: model loaded',
];

const logText = (modelId = 'qwen-14b') => screen.getByRole('log', { name: `Log of ${modelId}` }).textContent;

/**
 * jsdom lays nothing out, so the log gets the geometry of a pane 200 px high over `contentPx`
 * of text, with a scrollTop that stays within it, as a browser's does.
 */
function giveGeometry(element: HTMLElement, contentPx: () => number): void {
  let top = 0;
  Object.defineProperty(element, 'clientHeight', { configurable: true, get: () => 200 });
  Object.defineProperty(element, 'scrollHeight', { configurable: true, get: contentPx });
  Object.defineProperty(element, 'scrollTop', {
    configurable: true,
    get: () => top,
    set: (value: number) => void (top = Math.max(0, Math.min(value, contentPx() - 200))),
  });
}

describe('LogsView', () => {
  it("fetches the first model's log tail, then appends live lines, and copies the whole text", async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<LogsView />, twoGpusWithOtherProgram(), {
      setUp: (b) => (b.logs['qwen-14b'] = QWEN_LOG),
    });
    await waitFor(() => expect(logText()).toBe(QWEN_LOG.join('\n')));
    expect(bridge.logRequests).toEqual(['qwen-14b']);

    act(() => bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: 3, lines: ['slot update: 128 tokens decoded'] }));
    expect(logText()).toBe([...QWEN_LOG, 'slot update: 128 tokens decoded'].join('\n'));
    expect(screen.getByText('4 lines')).toBeTruthy();

    await user.click(screen.getByRole('button', { name: 'Copy log of qwen-14b' }));
    expect(await navigator.clipboard.readText()).toBe([...QWEN_LOG, 'slot update: 128 tokens decoded'].join('\n'));
    expect(screen.getByRole('status').textContent).toBe('Copied to the clipboard');
  });

  it('shows where the daemon left lines out, with their count', async () => {
    const { bridge } = renderWithSnapshot(<LogsView />, twoGpusWithOtherProgram(), { setUp: (b) => (b.logs['qwen-14b'] = QWEN_LOG) });
    await waitFor(() => expect(logText()).toBe(QWEN_LOG.join('\n')));
    act(() => bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: 1203, lines: ['ggml_cuda_error: out of memory'] }));
    expect(logText()).toBe([...QWEN_LOG, '… 1200 lines dropped', 'ggml_cuda_error: out of memory'].join('\n'));
  });

  it('freezes the text while paused, counts what arrives, and shows it on resume', async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<LogsView />, twoGpusWithOtherProgram(), { setUp: (b) => (b.logs['qwen-14b'] = QWEN_LOG) });
    await waitFor(() => expect(logText()).toBe(QWEN_LOG.join('\n')));

    await user.click(screen.getByRole('button', { name: 'Pause' }));
    expect(screen.getByRole('button', { name: 'Resume' }).getAttribute('aria-pressed')).toBe('true');
    act(() => bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: 3, lines: ['slot 0: prompt done', 'slot 0: 64 tokens'] }));
    expect(logText()).toBe(QWEN_LOG.join('\n'));
    expect(screen.getByText('Paused; 2 new lines since')).toBeTruthy();

    await user.click(screen.getByRole('button', { name: 'Resume' }));
    expect(logText()).toBe([...QWEN_LOG, 'slot 0: prompt done', 'slot 0: 64 tokens'].join('\n'));
    expect(screen.getByText('5 lines')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Pause' }).getAttribute('aria-pressed')).toBe('false');
  });

  it('follows the end until the person scrolls back, keeps their place while lines arrive, and follows again on request', async () => {
    const user = userEvent.setup();
    const { bridge, store } = renderWithSnapshot(<LogsView />, twoGpusWithOtherProgram(), { setUp: (b) => (b.logs['qwen-14b'] = QWEN_LOG) });
    await waitFor(() => expect(logText()).toBe(QWEN_LOG.join('\n')));
    const pane = screen.getByRole('log', { name: 'Log of qwen-14b' });
    // 20 px a line, as the text grows.
    giveGeometry(pane, () => (store.getState().logs['qwen-14b']?.length ?? 0) * 20);
    let position = 3;
    const more = (count: number) =>
      act(() => {
        bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: position, lines: Array.from({ length: count }, (_, i) => `line ${position + i}`) });
        position += count;
      });

    more(30); // 33 lines: 660 px of text in a 200 px pane
    expect(pane.scrollTop).toBe(460);
    expect(screen.queryByRole('button', { name: 'Follow new lines' })).toBeNull();

    pane.scrollTop = 100;
    act(() => pane.dispatchEvent(new Event('scroll')));
    more(10);
    expect(pane.scrollTop).toBe(100);
    expect(logText()).toContain('line 42');

    await user.click(screen.getByRole('button', { name: 'Follow new lines' }));
    expect(pane.scrollTop).toBe(660);
    expect(screen.queryByRole('button', { name: 'Follow new lines' })).toBeNull();
    more(5);
    expect(pane.scrollTop).toBe(760);
  });

  it('switches to another model and fetches its log', async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<LogsView />, twoGpusWithOtherProgram());
    bridge.logs['llama-8b'] = ['llama-8b ready'];
    await user.selectOptions(screen.getByRole('combobox', { name: 'Model' }), 'llama-8b');
    await waitFor(() => expect(logText('llama-8b')).toBe('llama-8b ready'));
    expect(bridge.logRequests).toEqual(['qwen-14b', 'llama-8b']);
  });

  it('fetches the log again from a daemon that restarted', async () => {
    const { bridge } = renderWithSnapshot(<LogsView />, twoGpusWithOtherProgram(), { setUp: (b) => (b.logs['qwen-14b'] = QWEN_LOG) });
    await waitFor(() => expect(logText()).toBe(QWEN_LOG.join('\n')));
    bridge.logs['qwen-14b'] = ['llama_model_loader: loaded meta data, after the restart'];
    act(() => bridge.emit({ type: 'SnapshotUpdated', snapshot: { ...twoGpusWithOtherProgram(), startedAt: NOW, revision: 1 } }));
    await waitFor(() => expect(logText()).toBe('llama_model_loader: loaded meta data, after the restart'));
    expect(bridge.logRequests).toEqual(['qwen-14b', 'qwen-14b']);
  });

  it('says why when the log cannot be read', async () => {
    renderWithSnapshot(<LogsView />, twoGpusWithOtherProgram(), {
      setUp: (b) =>
        (b.getLogs = async () => {
          throw new Error('GET /api/models/qwen-14b/logs answered HTTP 500.');
        }),
    });
    expect((await screen.findByRole('alert')).textContent).toBe('Could not read the log: GET /api/models/qwen-14b/logs answered HTTP 500.');
  });
});
