// @vitest-environment jsdom
import { act, cleanup, screen, within } from '@testing-library/react';
import { userEvent } from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { renderWithSnapshot } from '../../../renderer/src/test-fixtures/render.js';
import { quarantined, showcase, twoGpusWithOtherProgram } from '../../../renderer/src/test-fixtures/scenarios.js';
import { snapshot } from '../../../renderer/src/test-fixtures/snapshot-builder.js';
import { AUTH_REQUIRED_MESSAGE } from '../../../renderer/src/transport/http-bridge.js';
import { App } from '../../../renderer/src/components/app.js';

afterEach(cleanup);

describe('App', () => {
  it('keeps the last snapshot on screen, greyed, with "Reconnecting…" while the stream is lost, and recovers', () => {
    const { bridge, container } = renderWithSnapshot(<App />, twoGpusWithOtherProgram());
    expect(screen.getByRole('status', { name: 'Connection: Live' })).toBeTruthy();
    act(() => bridge.setConnected(false));
    expect(screen.getByRole('status', { name: 'Connection: Reconnecting…' })).toBeTruthy();
    expect(screen.getByRole('alert').textContent).toMatch(/^Lost the connection to llmtray\. Showing the state from .+; reconnecting…$/);
    const layout = container.querySelector('.layout');
    expect(layout?.classList.contains('is-stale')).toBe(true);
    expect(layout?.getAttribute('aria-busy')).toBe('true');
    // The stale models are still there to read.
    expect(screen.getByRole('listitem', { name: 'qwen-14b' })).toBeTruthy();

    act(() => bridge.setConnected(true));
    expect(screen.getByRole('status', { name: 'Connection: Live' })).toBeTruthy();
    expect(container.querySelector('.layout')?.classList.contains('is-stale')).toBe(false);
  });

  it('shows config errors as a banner naming the file', () => {
    renderWithSnapshot(
      <App />,
      snapshot({ configErrors: ["models[2].ctx: expected a positive number of tokens, got 'big'"] }),
    );
    const banner = screen.getByRole('alert', { name: 'The config file has an error; the last good config keeps running.' });
    expect(within(banner).getByText("models[2].ctx: expected a positive number of tokens, got 'big'")).toBeTruthy();
    expect(within(banner).getByText('File: /home/ada/.config/llmtray/config.yaml')).toBeTruthy();
  });

  it('says the defaults keep running, not a last good config, where none was read from the file', () => {
    renderWithSnapshot(<App />, snapshot({ configErrors: ['models[0].cxt: unknown field, set to 4096; did you mean "ctx"?'], configInForce: 'defaults' }));
    const banner = screen.getByRole('alert', { name: 'The config file has an error; llmtray runs on the defaults (only the models found in the model folders) until it is fixed.' });
    expect(banner.textContent).not.toContain('last good');
  });

  it('tells the person how to open the dashboard when the daemon refuses the page, saying each thing once', () => {
    const { store } = renderWithSnapshot(<App />, null);
    expect(screen.getByRole('heading', { name: 'Connecting to llmtray…' })).toBeTruthy();
    act(() => store.getState().setUnauthorized(AUTH_REQUIRED_MESSAGE));
    expect(screen.getByRole('heading', { name: 'Open the dashboard from llmtray' })).toBeTruthy();
    const page = screen.getByRole('alert');
    expect(page.textContent).toContain("This page does not have llmtray's admin token. Open the dashboard from the URL that llmtray serve prints, or run llmtray dashboard.");
    // The commands as code, and each piece of advice once (issue 13: the page said it twice).
    expect(within(page).getAllByText('llmtray dashboard', { selector: 'code' })).toHaveLength(1);
    expect(within(page).getAllByText('llmtray serve', { selector: 'code' })).toHaveLength(1);
    expect(page.textContent?.match(/admin token/g)).toHaveLength(1);
  });

  it('moves between views with the arrow keys and badges failing models and unfit ones', async () => {
    const user = userEvent.setup();
    renderWithSnapshot(<App />, showcase());
    expect(screen.getByRole('tab', { name: 'Recovery (1 failing)' })).toBeTruthy();
    expect(screen.getByRole('tab', { name: 'Why (1 did not fit)' })).toBeTruthy();
    screen.getByRole('tab', { name: 'Models' }).focus();
    await user.keyboard('{ArrowRight}');
    expect(screen.getByRole('tab', { name: 'Recovery (1 failing)', selected: true })).toBe(document.activeElement);
    expect(screen.getByRole('button', { name: 'Retry demo-broken' })).toBeTruthy();
    await user.keyboard('{End}');
    expect(screen.getByRole('tab', { name: 'Add model', selected: true })).toBeTruthy();
    await user.keyboard('{ArrowRight}');
    expect(screen.getByRole('tab', { name: 'Models', selected: true })).toBeTruthy();
  });

  it('opens the recovery of a quarantined model from its row', async () => {
    const user = userEvent.setup();
    renderWithSnapshot(<App />, quarantined());
    await user.click(screen.getByRole('button', { name: 'Recovery details for demo-broken' }));
    expect(screen.getByRole('tab', { name: 'Recovery (1 failing)', selected: true })).toBeTruthy();
  });

  it("posts a command's outcome and a quarantine as notices", async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<App />, twoGpusWithOtherProgram(), {
      setUp: (b) => (b.answer = async () => ({ ok: false, message: 'llama-8b is already unloading.' })),
    });
    await user.click(screen.getByRole('button', { name: 'Unload llama-8b' }));
    expect(await screen.findByText('llama-8b is already unloading.')).toBeTruthy();
    act(() => bridge.emit({ type: 'ModelQuarantined', modelId: 'demo-broken', reason: 'crashed 5 times', at: 0 }));
    expect(screen.getByText('demo-broken was quarantined: crashed 5 times')).toBeTruthy();
    await user.click(screen.getAllByRole('button', { name: 'Dismiss' })[0]!);
    expect(screen.queryByText('llama-8b is already unloading.')).toBeNull();
  });

  it('offers ready-to-paste examples for the current models on Connect', async () => {
    const user = userEvent.setup();
    renderWithSnapshot(<App />, twoGpusWithOtherProgram());
    await user.click(screen.getByRole('tab', { name: 'Connect' }));
    expect(screen.getByRole('region', { name: 'curl example' }).textContent).toContain('curl http://127.0.0.1:9137/v1/chat/completions');
    expect(screen.getByRole('region', { name: 'curl example' }).textContent).toContain('"model": "qwen-14b"');
    await user.selectOptions(screen.getByRole('combobox', { name: 'Model for the example' }), 'llama-8b');
    await user.click(screen.getByRole('button', { name: 'OpenAI SDK (Python)' }));
    const python = screen.getByRole('region', { name: 'OpenAI SDK (Python) example' }).textContent ?? '';
    expect(python).toContain('base_url="http://127.0.0.1:9137/v1"');
    expect(python).toContain('model="llama-8b"');
    await user.click(screen.getByRole('button', { name: 'Copy OpenAI SDK (Python) example' }));
    expect(await navigator.clipboard.readText()).toBe(python);
    await user.click(screen.getByRole('button', { name: 'Copy endpoint URL' }));
    expect(await navigator.clipboard.readText()).toBe('http://127.0.0.1:9137/v1');
  });
});
