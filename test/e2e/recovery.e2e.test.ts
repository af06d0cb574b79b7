// A corrupt model in the dashboard: demo-broken crashes on every launch, climbs the recovery
// ladder (retries with backoff) to quarantine, and shows llama.cpp's own words for why. The
// Retry button is the person's way out, and it must really reach the daemon.
// Its own daemon: the ladder takes a while (backoff 1 + 2 + 4 + 8 s), which overlaps the
// other browser files instead of adding to them.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium, modelRow, openWatchedPage, screenshot, type WatchedPage } from './support/browser.js';
import { startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

/** Five crashing launches and four backoffs, on a loaded machine. A failure's deadline only. */
const QUARANTINE_MS = 90_000;

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
  expect(quarantined).toMatchObject({ state: 'quarantined', recovery: { kind: 'crash', attempts: 5 } });
  await screenshot(page, 'recovery-quarantined');

  await retry.click();

  // The button belongs to a quarantined model, so its going away is the page seeing the daemon
  // lift the quarantine. The model is still corrupt and will climb the ladder again; what
  // matters is that the ladder started over.
  await retry.waitFor({ state: 'detached' });
  const after = (await daemon.state()).models.find((m) => m.id === 'demo-broken')?.status;
  expect(after?.state).not.toBe('quarantined');
  expect(after?.recovery.attempts).toBeLessThan(5);
  expect(problems).toEqual([]);
});
