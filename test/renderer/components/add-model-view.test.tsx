// @vitest-environment jsdom
import { act, cleanup, screen, within } from '@testing-library/react';
import { userEvent } from '@testing-library/user-event';
import { afterEach, expect, it } from 'vitest';
import type { PullView } from '../../../core/contracts/hub/pulls.js';
import { AddModelView } from '../../../renderer/src/components/add-model-view.js';
import { renderWithSnapshot } from '../../../renderer/src/test-fixtures/render.js';
import { snapshot } from '../../../renderer/src/test-fixtures/snapshot-builder.js';

afterEach(cleanup);

const REPO = 'bartowski/Qwen2.5-0.5B-Instruct-GGUF';
const pull = (over: Partial<PullView>): PullView => ({
  id: `hf.co/${REPO}:Q4_K_M`, repo: REPO, state: 'downloading', files: [], receivedBytes: 0, totalBytes: 400 * 1024 * 1024, bytesPerSecond: 0, secondsLeft: null, message: '', startedAt: 1, ...over,
});

it('searches the Hub, opens a repo with each quant marked by how it would run here, pulls one, follows it and cancels it', async () => {
  const user = userEvent.setup();
  const { bridge } = renderWithSnapshot(<AddModelView />, snapshot({}), {
    setUp: (b) => {
      b.hubHits = [{ repo: REPO, downloads: 12345, likes: 3, gated: false }, { repo: 'meta-llama/Llama-3.2-1B-GGUF', downloads: 10, likes: 1, gated: true }];
      b.offers[REPO] = {
        repo: REPO,
        quants: [
          { quant: 'F16', path: 'qwen-f16.gguf', sizeBytes: 1000 * 1024 * 1024, parts: 1, fit: 'partial', fitWords: 'partly in host RAM: 600 MiB on GPU 0, 400 MiB in RAM, at 2048 tokens', pullAs: `hf.co/${REPO}:F16` },
          { quant: 'Q4_K_M', path: 'qwen-q4_k_m.gguf', sizeBytes: 400 * 1024 * 1024, parts: 1, fit: 'whole', fitWords: 'whole on GPU 0 at 8192 tokens (600 MiB)', pullAs: `hf.co/${REPO}:Q4_K_M` },
        ],
      };
    },
  });
  await user.type(screen.getByRole('searchbox'), 'qwen 0.5b');
  await user.click(screen.getByRole('button', { name: 'Search' }));
  const found = screen.getByRole('list', { name: 'Models found' });
  expect(within(found).getByText('· gated: needs HF_TOKEN', { exact: false })).toBeTruthy();
  await user.click(within(found).getByRole('button', { name: REPO }));

  const table = screen.getByRole('table', { name: `Quants of ${REPO}` });
  const rows = within(table).getAllByRole('row').slice(1).map((row) => row.textContent);
  expect(rows).toEqual([
    'F161000 MiBPartly in RAM partly in host RAM: 600 MiB on GPU 0, 400 MiB in RAM, at 2048 tokensPull',
    'Q4_K_M400 MiBWhole on GPU whole on GPU 0 at 8192 tokens (600 MiB)Pull',
  ]);
  await user.click(screen.getByRole('button', { name: `Pull hf.co/${REPO}:Q4_K_M` }));
  expect(bridge.pullCalls).toEqual(['search qwen 0.5b', `start hf.co/${REPO}:Q4_K_M`]);

  act(() => bridge.emit({ type: 'PullProgressed', pull: pull({ receivedBytes: 100 * 1024 * 1024, bytesPerSecond: 10 * 1024 * 1024, secondsLeft: 30 }) }));
  const pulls = screen.getByRole('list', { name: 'Pulls' });
  expect(within(pulls).getByRole('progressbar', { name: `hf.co/${REPO}:Q4_K_M downloaded` }).getAttribute('value')).toBe(String(100 * 1024 * 1024));
  expect(pulls.textContent).toContain('100 MiB of 400 MiB · 10 MiB/s · 30 s left');
  await user.click(within(pulls).getByRole('button', { name: `Cancel the pull of hf.co/${REPO}:Q4_K_M` }));
  expect(bridge.pullCalls.at(-1)).toBe(`cancel hf.co/${REPO}:Q4_K_M`);
  act(() => bridge.emit({ type: 'PullProgressed', pull: pull({ state: 'cancelled', message: 'cancelled after 100 MiB of 400 MiB; pull again to resume' }) }));
  expect(pulls.textContent).toContain('cancelled: cancelled after 100 MiB of 400 MiB; pull again to resume');
  expect(within(pulls).queryByRole('button', { name: /Cancel/ })).toBeNull();
});

it("tells of a pull's end once, done or failed, in the daemon's words", () => {
  const { bridge, store } = renderWithSnapshot(<AddModelView />, snapshot({}));
  act(() => bridge.emit({ type: 'PullProgressed', pull: pull({ state: 'done', message: `pulled; served as hf.co/${REPO}:Q4_K_M` }) }));
  act(() => bridge.emit({ type: 'PullProgressed', pull: pull({ state: 'done', message: `pulled; served as hf.co/${REPO}:Q4_K_M` }) }));
  act(() => bridge.emit({ type: 'PullProgressed', pull: pull({ id: 'hf.co/o/r:Q8_0', state: 'failed', message: 'o/r is gated: set HF_TOKEN' }) }));
  expect(store.getState().notices.map((n) => [n.tone, n.message])).toEqual([
    ['ok', `hf.co/${REPO}:Q4_K_M is pulled: pulled; served as hf.co/${REPO}:Q4_K_M`],
    ['error', 'Pulling hf.co/o/r:Q8_0 failed: o/r is gated: set HF_TOKEN'],
  ]);
});

it("says the daemon's refusal in its words", async () => {
  const user = userEvent.setup();
  renderWithSnapshot(<AddModelView />, snapshot({}), { setUp: (b) => (b.hubHits = [{ repo: 'nobody/Gone-GGUF', downloads: 0, likes: 0, gated: false }]) });
  await user.type(screen.getByRole('searchbox'), 'gone');
  await user.click(screen.getByRole('button', { name: 'Search' }));
  await user.click(screen.getByRole('button', { name: 'nobody/Gone-GGUF' }));
  expect(screen.getByRole('alert').textContent).toBe('There is no model nobody/Gone-GGUF on the Hub.');
});
