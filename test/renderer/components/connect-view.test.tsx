// @vitest-environment jsdom
import { act, cleanup, screen, within } from '@testing-library/react';
import { userEvent } from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { renderWithSnapshot } from '../../../renderer/src/test-fixtures/render.js';
import { model, snapshot } from '../../../renderer/src/test-fixtures/snapshot-builder.js';
import { CLIENT_KEY_PLACEHOLDER } from '../../../renderer/src/components/connect-examples.js';
import { ConnectView } from '../../../renderer/src/components/connect-view.js';

afterEach(cleanup);

const LOCAL = 'http://127.0.0.1:9137/v1';
const LAN = ['http://192.168.1.20:9137/v1', 'http://workstation.lan:9137/v1'];
const models = [model('qwen-14b'), model('llama-8b')];

const exampleText = (label: string): string => screen.getByRole('region', { name: `${label} example` }).textContent ?? '';

describe('ConnectView on a loopback listener with no client key', () => {
  it('shows the one endpoint and examples with no key to find', async () => {
    const user = userEvent.setup();
    renderWithSnapshot(<ConnectView />, snapshot({ models }));
    expect(screen.queryByText('This machine')).toBeNull();
    expect(screen.queryByText('Other machines')).toBeNull();
    expect(screen.queryByRole('note')).toBeNull();
    expect(screen.queryByRole('combobox', { name: 'Base URL for the example' })).toBeNull();
    expect(exampleText('curl')).toBe(
      `curl ${LOCAL}/chat/completions \\\n  -H 'Content-Type: application/json' \\\n  -d '{"model": "qwen-14b", "max_tokens": 64, "messages": [{"role": "user", "content": "Hello!"}]}'`,
    );
    await user.click(screen.getByRole('button', { name: 'OpenAI SDK (JavaScript)' }));
    expect(exampleText('OpenAI SDK (JavaScript)')).toContain(`new OpenAI({ baseURL: '${LOCAL}', apiKey: 'llmtray' })`);
    // Bounded, as the curl one: an unbounded answer from a model that never ends its turn is a minute of noise.
    expect(exampleText('OpenAI SDK (JavaScript)')).toContain('max_tokens: 64,');
    await user.click(screen.getByRole('button', { name: 'OpenAI SDK (Python)' }));
    expect(exampleText('OpenAI SDK (Python)')).toContain('max_tokens=64,');
    await user.click(screen.getByRole('button', { name: 'Copy base URL' }));
    expect(await navigator.clipboard.readText()).toBe(LOCAL);
  });
});

describe('ConnectView in LAN mode (listen.host on the network, listen.clientKeys set)', () => {
  const lan = () => snapshot({ models, networkEndpoints: LAN, keysRequired: true, clientKeyNames: ['laptop', 'phone'] });

  it('lists every base URL, this machine’s first, each with its own copy button', async () => {
    const user = userEvent.setup();
    renderWithSnapshot(<ConnectView />, lan());
    expect(screen.getByText('This machine')).toBeTruthy();
    expect(screen.getAllByText('Other machines')).toHaveLength(2);
    for (const url of LAN) {
      await user.click(screen.getByRole('button', { name: `Copy base URL ${url}` }));
      expect(await navigator.clipboard.readText()).toBe(url);
    }
    await user.click(screen.getByRole('button', { name: 'Copy base URL' }));
    expect(await navigator.clipboard.readText()).toBe(LOCAL);
  });

  it('says where the keys are configured and how clients send one, naming the keys but never showing one', () => {
    renderWithSnapshot(<ConnectView />, lan());
    const note = screen.getByRole('note').textContent ?? '';
    expect(note).toContain('listen.clientKeys in /home/ada/.config/llmtray/config.yaml');
    expect(note).toContain('configured: laptop, phone');
    expect(note).toContain('Authorization: Bearer <key>');
    expect(note).toContain('x-api-key: <key>');
  });

  it('puts the key placeholder in every example, as a Bearer header in curl', async () => {
    const user = userEvent.setup();
    renderWithSnapshot(<ConnectView />, lan());
    expect(exampleText('curl')).toBe(
      `curl ${LOCAL}/chat/completions \\\n  -H 'Content-Type: application/json' \\\n  -H 'Authorization: Bearer ${CLIENT_KEY_PLACEHOLDER}' \\\n  -d '{"model": "qwen-14b", "max_tokens": 64, "messages": [{"role": "user", "content": "Hello!"}]}'`,
    );
    await user.click(screen.getByRole('button', { name: 'OpenAI SDK (JavaScript)' }));
    expect(exampleText('OpenAI SDK (JavaScript)')).toContain(`apiKey: '${CLIENT_KEY_PLACEHOLDER}'`);
    await user.click(screen.getByRole('button', { name: 'OpenAI SDK (Python)' }));
    expect(exampleText('OpenAI SDK (Python)')).toContain(`api_key="${CLIENT_KEY_PLACEHOLDER}"`);
    expect(exampleText('OpenAI SDK (Python)')).not.toContain('"llmtray"');
  });

  it('builds the example for the base URL chosen, and copies what it shows', async () => {
    const user = userEvent.setup();
    renderWithSnapshot(<ConnectView />, lan());
    const chooser = screen.getByRole('combobox', { name: 'Base URL for the example' });
    expect(within(chooser).getAllByRole('option').map((option) => option.textContent)).toEqual([LOCAL, ...LAN]);
    await user.selectOptions(chooser, LAN[1]!);
    const curl = exampleText('curl');
    expect(curl.startsWith(`curl ${LAN[1]}/chat/completions`)).toBe(true);
    await user.click(screen.getByRole('button', { name: 'Copy curl example' }));
    expect(await navigator.clipboard.readText()).toBe(curl);
  });

  it('goes back to this machine’s base URL when a reload takes the chosen one away', async () => {
    const user = userEvent.setup();
    const { bridge } = renderWithSnapshot(<ConnectView />, lan());
    await user.selectOptions(screen.getByRole('combobox', { name: 'Base URL for the example' }), LAN[1]!);
    act(() => bridge.emit({ type: 'SnapshotUpdated', snapshot: { ...lan(), revision: 8, networkEndpoints: [LAN[0]!] } }));
    expect(exampleText('curl').startsWith(`curl ${LOCAL}/chat/completions`)).toBe(true);
  });
});

describe('ConnectView with keys required otherwise', () => {
  it('asks for a key on a loopback listener once one is configured, with no network URL to offer', () => {
    renderWithSnapshot(<ConnectView />, snapshot({ models, keysRequired: true, clientKeyNames: ['laptop'] }));
    expect(screen.queryByText('Other machines')).toBeNull();
    expect(screen.queryByRole('combobox', { name: 'Base URL for the example' })).toBeNull();
    expect(screen.getByRole('note').textContent).toContain('configured: laptop');
    expect(exampleText('curl')).toContain(`-H 'Authorization: Bearer ${CLIENT_KEY_PLACEHOLDER}'`);
  });

  it('says a network listener with no key left serves nobody, and where to add one', () => {
    renderWithSnapshot(<ConnectView />, snapshot({ models, networkEndpoints: LAN, keysRequired: true, clientKeyNames: [] }));
    expect(screen.getByRole('note').textContent).toBe(
      'No client key is configured, so this endpoint serves nobody: add one under listen.clientKeys in /home/ada/.config/llmtray/config.yaml.',
    );
  });
});
