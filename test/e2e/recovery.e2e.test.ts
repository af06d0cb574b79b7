// A corrupt model in the dashboard: demo-broken's file can never load, so its first failure is
// `invalid` and it is quarantined at once. Its card on the Models tab must say why in
// llama.cpp's own words and offer Retry (issue 13: both were a tab away, behind a disabled
// Load), and that Retry must really reach the daemon.
// Its own daemon: a retried demo-broken is launched again, which would disturb the other
// browser files' models.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium, modelRow, openWatchedPage, screenshot, type WatchedPage } from './support/browser.js';
import { startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

/** One failing launch of a corrupt file, on a loaded machine. A failure's deadline only. */
const QUARANTINE_MS = 60_000;

let dataDir: string;
let daemon: DaemonProcess;
let browser: Browser;
let watched: WatchedPage;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'llmtray-e2e-recovery-'));
  [daemon, browser] = await Promise.all([startDaemonProcess({ dataDir, startTimeoutMs: 60_000 }), launchChromium()]);
  watched = await openWatchedPage(browser);
});

afterAll(async () => {
  await browser?.close();
  await daemon?.stop();
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
});

it("quarantines demo-broken, its card shows llama.cpp's reason, and the card's Retry sends it back to the ladder", { timeout: 2 * QUARANTINE_MS + 30_000 }, async () => {
  const { page, problems } = watched;
  await page.goto(daemon.dashboardUrl);
  const card = modelRow(page, 'demo-broken');
  await card.getByRole('button', { name: 'Load demo-broken' }).click();

  await card.getByText('Quarantined', { exact: true }).waitFor({ timeout: QUARANTINE_MS });
  const quarantined = (await daemon.model('demo-broken')).status;
  expect(quarantined).toMatchObject({ state: 'quarantined', recovery: { kind: 'invalid', attempts: 1 } });
  const lastError = quarantined.recovery.lastError ?? '';
  // The corrupt-file reason as llama.cpp gave it, on the card itself.
  expect(lastError).toMatch(/data is not within the file bounds/);
  const why = card.getByRole('group', { name: 'Why demo-broken is quarantined' });
  await why.getByText(/data is not within the file bounds/).waitFor();
  // The whole of it is on the card, or one click away when the card shortened it.
  const more = why.getByRole('button', { name: 'Full reason for demo-broken' });
  if ((await more.count()) > 0) await more.click();
  expect(await why.innerText()).toContain(lastError);
  // Nothing to Load: Retry is the way out.
  expect(await card.getByRole('button', { name: 'Load demo-broken' }).count()).toBe(0);
  const retry = card.getByRole('button', { name: 'Retry demo-broken' });
  await screenshot(page, 'recovery-quarantined-card');

  const launches = (): number => daemon.stderr().split('\n').filter((line) => line.includes('launching demo-broken')).length;
  const launchedBefore = launches();
  await retry.click();

  // The retry reached the daemon: the ladder started over and the model was launched again.
  // Still corrupt, it is quarantined again at its first failure, and the card shows that too.
  await expect.poll(launches, { timeout: QUARANTINE_MS }).toBeGreaterThan(launchedBefore);
  await card.getByText('Quarantined', { exact: true }).waitFor({ timeout: QUARANTINE_MS });
  await expect.poll(async () => (await daemon.model('demo-broken')).status, { timeout: QUARANTINE_MS }).toMatchObject({
    state: 'quarantined',
    recovery: { kind: 'invalid', attempts: 1 },
  });

  // The Recovery tab tells the same story in full.
  await page.getByRole('tab', { name: /^Recovery/ }).click();
  const recovery = page.getByRole('list', { name: 'Recovery' }).getByRole('listitem', { name: 'demo-broken', exact: true });
  await recovery.getByText(/data is not within the file bounds/).waitFor();
  await recovery.getByRole('button', { name: 'Retry demo-broken' }).waitFor();
  expect(problems).toEqual([]);
});
