// The Activity tab as a person uses it: a real `llmtray serve --demo` child process, a real
// Chromium, a local app's requests sent with the official `openai` client, and the tab read by
// role and accessible name: the requests it lists (live, as each ends), the summary per model,
// a sort by a click on a column.
import OpenAI, { NotFoundError } from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ActivityAnswer } from '../../core/contracts/requests/request-record.js';
import { launchChromium, openWatchedPage, screenshot, type WatchedPage } from './support/browser.js';
import { removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let daemon: DaemonProcess;
let browser: Browser;
let client: OpenAI;
let watched: WatchedPage;
let page: Page;

beforeAll(async () => {
  [daemon, browser] = await Promise.all([startDaemonProcess({ startTimeoutMs: 60_000 }), launchChromium()]);
  client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'any-key-works', maxRetries: 0 });
  watched = await openWatchedPage(browser);
  page = watched.page;
});

afterAll(async () => {
  await browser?.close();
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
});

afterEach(() => {
  expect(watched.problems).toEqual([]);
});

const requestsTable = () => page.getByRole('table', { name: 'Requests', exact: true });
/** The body rows of the requests table (the first row is its header). */
const requestRows = () => requestsTable().getByRole('row').filter({ hasNot: page.getByRole('columnheader') });

async function heldCount(): Promise<number> {
  return ((await (await daemon.api('/api/activity')).json()) as ActivityAnswer).requests.length;
}

describe('the Activity tab', () => {
  it('lists what each request cost, with a summary per model', async () => {
    await client.chat.completions.create({ model: 'tiny', max_tokens: 6, messages: [{ role: 'user', content: 'Say hello.' }] });
    for await (const _chunk of await client.chat.completions.create({ model: 'tiny', max_tokens: 6, stream: true, messages: [{ role: 'user', content: 'Count.' }] }));
    await expect(client.chat.completions.create({ model: 'demo-tinny', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(NotFoundError);
    await expect.poll(heldCount, { timeout: 10_000 }).toBe(3);

    await page.goto(daemon.dashboardUrl);
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    await page.getByRole('tab', { name: 'Activity' }).click();
    await expect.poll(() => requestRows().count()).toBe(3);
    // Newest first: the refusal, then the stream, then the cold request that waited for demo-tiny's load.
    const texts = await requestRows().allInnerTexts();
    expect(texts[0]).toContain('404');
    expect(texts[0]).toContain('demo-tinny');
    expect(texts[0]).toContain("Model 'demo-tinny' does not exist");
    expect(texts[1]).toMatch(/200\s+demo-tiny\s+\/v1\/chat\/completions\s+stream/);
    expect(texts[1]).toMatch(/tok\/s/);
    expect(texts[2]).toMatch(/load \d/);
    const summary = page.getByRole('table', { name: 'Requests per model' }).getByRole('row', { name: /^demo-tiny/ });
    expect((await summary.getByRole('cell').allInnerTexts()).slice(0, 2)).toEqual(['2', '0']);
    await screenshot(page, 'activity');
  });

  it('adds a request as it ends, without a reload', async () => {
    await client.completions.create({ model: 'tiny', prompt: 'Once upon', max_tokens: 4 });
    await expect.poll(() => requestRows().count(), { timeout: 10_000 }).toBe(4);
    expect(await requestRows().first().innerText()).toContain('/v1/completions');
  });

  it('sorts by the column a person clicks, and the other way on a second click', async () => {
    const took = page.getByRole('columnheader', { name: /Took/ });
    await took.getByRole('button').click();
    expect(await took.getAttribute('aria-sort')).toBe('descending');
    // The cold request, which waited for the load, took longest.
    expect(await requestRows().first().innerText()).toMatch(/load \d/);
    await took.getByRole('button').click();
    expect(await took.getAttribute('aria-sort')).toBe('ascending');
    expect(await requestRows().last().innerText()).toMatch(/load \d/);
  });
});
