// A corrupt model in the dashboard: demo-broken's file can never load, so its first failure is
// `invalid` and it is quarantined at once, showing llama.cpp's own words for why. The Retry
// button is the person's way out, and it must really reach the daemon.
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

it("quarantines demo-broken with llama.cpp's reason, and Retry sends it back to the ladder", { timeout: QUARANTINE_MS + 30_000 }, async () => {
  const { page, problems } = watched;
  await page.goto(daemon.dashboardUrl);
  await modelRow(page, 'demo-broken').getByRole('button', { name: 'Load demo-broken' }).click();

  await page.getByRole('tab', { name: /^Recovery/ }).click();
  const card = page.getByRole('list', { name: 'Recovery' }).getByRole('listitem', { name: 'demo-broken', exact: true });
  await card.getByText('Quarantined', { exact: true }).waitFor({ timeout: QUARANTINE_MS });
  await card.getByText(/data is not within the file bounds/).waitFor();
  const retry = card.getByRole('button', { name: 'Retry demo-broken' });
  await retry.waitFor();
  const quarantined = (await daemon.state()).models.find((m) => m.id === 'demo-broken')?.status;
  expect(quarantined).toMatchObject({ state: 'quarantined', recovery: { kind: 'invalid', attempts: 1 } });
  await screenshot(page, 'recovery-quarantined');

  const launches = (): number => daemon.stderr().split('\n').filter((line) => line.includes('launching demo-broken')).length;
  const launchedBefore = launches();
  await retry.click();

  // The retry reached the daemon: the ladder started over and the model was launched again.
  // Still corrupt, it is quarantined again at its first failure, and the page shows that too.
  while (launches() === launchedBefore) await new Promise((resolve) => setTimeout(resolve, 50));
  await card.getByText('Quarantined', { exact: true }).waitFor({ timeout: QUARANTINE_MS });
  const after = (await daemon.state()).models.find((m) => m.id === 'demo-broken')?.status;
  expect(after).toMatchObject({ state: 'quarantined', recovery: { kind: 'invalid', attempts: 1 } });
  expect(problems).toEqual([]);
});
