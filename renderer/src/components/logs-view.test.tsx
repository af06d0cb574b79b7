// @vitest-environment jsdom
import { act, cleanup, screen, waitFor } from '@testing-library/react';
import { userEvent } from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { renderWithSnapshot } from '../test-fixtures/render.js';
import { twoGpusWithOtherProgram } from '../test-fixtures/scenarios.js';
import { LogsView } from './logs-view.js';

afterEach(cleanup);

const QWEN_LOG = [
  'llama_model_loader: loaded meta data with 29 key-value pairs and 579 tensors from qwen-14b.gguf',
  'load_tensors: offloaded 49/49 layers to GPU',
  'srv  llama_server: model loaded',
];

describe('LogsView', () => {
  it("fetches the first model's log tail, then appends live lines, and copies the whole text", async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<LogsView />, twoGpusWithOtherProgram(), {
      setUp: (b) => (b.logs['qwen-14b'] = QWEN_LOG),
    });
    await waitFor(() => expect(screen.getByRole('log', { name: 'Log of qwen-14b' }).textContent).toBe(QWEN_LOG.join('\n')));
    expect(bridge.logRequests).toEqual(['qwen-14b']);

    act(() => bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', lines: ['slot update: 128 tokens decoded'] }));
    expect(screen.getByRole('log', { name: 'Log of qwen-14b' }).textContent).toBe([...QWEN_LOG, 'slot update: 128 tokens decoded'].join('\n'));
    expect(screen.getByText('4 lines')).toBeTruthy();

    await user.click(screen.getByRole('button', { name: 'Copy log of qwen-14b' }));
    expect(await navigator.clipboard.readText()).toBe([...QWEN_LOG, 'slot update: 128 tokens decoded'].join('\n'));
    expect(screen.getByRole('status').textContent).toBe('Copied to the clipboard');
  });

  it('switches to another model and fetches its log', async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<LogsView />, twoGpusWithOtherProgram());
    bridge.logs['llama-8b'] = ['llama-8b ready'];
    await user.selectOptions(screen.getByRole('combobox', { name: 'Model' }), 'llama-8b');
    await waitFor(() => expect(screen.getByRole('log', { name: 'Log of llama-8b' }).textContent).toBe('llama-8b ready'));
    expect(bridge.logRequests).toEqual(['qwen-14b', 'llama-8b']);
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
