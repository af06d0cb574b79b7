// The dashboard as a person uses it: a real `llmtray serve --demo` child process, Debian's
// Chromium, the page driven by role and accessible name. The steps below build on each other
// in order (vitest runs a file's tests in sequence), as one person's session would: open the
// printed URL, pin demo-chat, watch a local app's request for demo-tiny get refused and read why.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { reasonLines } from '../../core/contracts/snapshot-words.js';
import { launchChromium, memoryFigure, modelRow, openWatchedPage, screenshot, type WatchedPage } from './support/browser.js';
import { startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

const DEMO_MODELS = ['demo-chat', 'demo-draft', 'demo-tiny', 'demo-broken', 'demo-embed'];
/** Bounds for what the daemon does on its own on a loaded 2-core machine; a failure's deadline, never a speed assertion. */
const LOAD_MS = 60_000;

let dataDir: string;
let daemon: DaemonProcess;
let browser: Browser;
const pages: WatchedPage[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'llmtray-e2e-dashboard-'));
  [daemon, browser] = await Promise.all([startDaemonProcess({ dataDir, startTimeoutMs: 60_000 }), launchChromium()]);
});

afterAll(async () => {
  await browser?.close();
  await daemon?.stop();
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
});

afterEach(() => {
  for (const { problems } of pages) expect(problems).toEqual([]);
});

async function open(): Promise<Page> {
  const watched = await openWatchedPage(browser);
  pages.push(watched);
  return watched.page;
}

describe('without the token', () => {
  it('shows how to open the dashboard instead of an empty one', async () => {
    const page = await open();
    await page.goto(`${daemon.origin}/`);

    const signIn = page.getByRole('alert').filter({ has: page.getByRole('heading', { name: 'Open the dashboard from llmtray' }) });
    await signIn.waitFor();
    expect(await signIn.innerText()).toContain('llmtray dashboard');
    expect(await page.getByRole('list', { name: 'Models' }).count()).toBe(0);
    await screenshot(page, 'sign-in-needed');

    // The printed URL pasted into this same tab differs from it only by its #token= fragment,
    // which the browser takes without loading anything: the dashboard must still open.
    await page.goto(daemon.dashboardUrl);
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    await modelRow(page, 'demo-chat').waitFor();
    expect(page.url()).toBe(`${daemon.origin}/`);
  });
});

describe('a person at the dashboard', () => {
  let page: Page;
  beforeAll(async () => {
    page = await open();
  });

  it('lists the demo models after opening the printed URL, and takes the token off the address bar', async () => {
    const adminRequests: { path: string; authorization: string | undefined }[] = [];
    page.on('request', (request) => {
      const { pathname } = new URL(request.url());
      if (pathname.startsWith('/api/')) adminRequests.push({ path: pathname, authorization: request.headers().authorization });
    });
    await page.goto(daemon.dashboardUrl);

    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    const names = page.getByRole('list', { name: 'Models' }).getByRole('heading', { level: 3 });
    await expect.poll(() => names.allInnerTexts(), { timeout: 45_000 }).toEqual(DEMO_MODELS);
    for (const id of DEMO_MODELS) await modelRow(page, id).getByRole('switch', { name: `Pin ${id}` }).waitFor();
    // page.url() includes any fragment: the token must be gone from the address bar and the history entry.
    expect(page.url()).toBe(`${daemon.origin}/`);
    // The token travels as a Bearer header on every admin request, the event stream's included,
    // and the daemon set no cookie: none would stay on this origin for other ports to receive.
    expect(adminRequests.map((r) => r.path)).toContain('/api/events');
    expect(adminRequests.filter((r) => r.authorization !== `Bearer ${daemon.token}`)).toEqual([]);
    expect(await page.context().cookies()).toEqual([]);
  });

  it('stays signed in across a reload: the tab remembers the token, the address still shows none', async () => {
    await page.reload();
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    await modelRow(page, 'demo-chat').waitFor();
    expect(page.url()).toBe(`${daemon.origin}/`);
  });

  it('pinning demo-chat loads it to Ready and its memory appears in the picture', async () => {
    const usedBefore = await memoryFigure(page, 'Used');
    const row = modelRow(page, 'demo-chat');
    const pin = row.getByRole('switch', { name: 'Pin demo-chat' });
    expect(await pin.isChecked()).toBe(false);

    await pin.click();

    await row.getByText('Ready', { exact: true }).waitFor({ timeout: LOAD_MS });
    expect(await pin.isChecked()).toBe(true);
    const memory = page.getByRole('region', { name: 'Memory' });
    await memory.getByRole('img', { name: /^demo-chat: / }).waitFor();
    await memory.getByRole('img', { name: /^demo-draft, draft of demo-chat: / }).waitFor();
    await expect.poll(() => memoryFigure(page, 'Used'), { timeout: 45_000 }).toBeGreaterThan(usedBefore);
    expect((await daemon.state()).models.find((m) => m.id === 'demo-chat')?.pinned).toBe(true);
    await screenshot(page, 'pinned-demo-chat');
  });

  it("refuses a request for demo-tiny while pinned demo-chat holds the budget, and the Why tab gives the plan's reason", async () => {
    const client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'not-needed', maxRetries: 0 });
    const refusal: unknown = await client.chat.completions
      .create({ model: 'demo-tiny', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4 })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refusal).toBeInstanceOf(APIError);
    expect(refusal).toMatchObject({ status: 503, code: 'model_unschedulable' });

    const reason = (await daemon.state()).plan?.unschedulable.find((entry) => entry.modelId === 'demo-tiny')?.reason;
    // The policy's sentence: what demo-tiny needs, the budget, and who holds the rest, with numbers.
    expect(reason).toMatch(/needs [\d.]+ [KMG]iB; [\d.]+ [KMG]iB budget, .*pinned demo-chat/);
    expect((refusal as APIError).message).toContain(reason);

    // Shown a line per clause, each the policy's own words: the need, the budget's room, the verdict.
    const lines = reasonLines(reason ?? '');
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.every((line) => reason?.includes(line))).toBe(true);

    await page.getByRole('tab', { name: /^Why/ }).click();
    const unfit = page.getByRole('region', { name: 'Did not fit' }).getByRole('listitem', { name: 'demo-tiny', exact: true });
    const whyLines = unfit.getByRole('list', { name: 'Why demo-tiny did not fit' }).getByRole('listitem');
    await expect.poll(() => whyLines.allInnerTexts(), { timeout: 45_000 }).toEqual(lines);
    await screenshot(page, 'why-demo-tiny');

    // demo-tiny's own card says the same, so the Models tab alone explains the queue.
    await page.getByRole('tab', { name: 'Models' }).click();
    const cardLines = modelRow(page, 'demo-tiny').getByRole('list', { name: 'Why demo-tiny was left out' }).getByRole('listitem');
    await expect.poll(() => cardLines.allInnerTexts(), { timeout: 45_000 }).toEqual(lines);
    await screenshot(page, 'dashboard-demo');
  });
});
