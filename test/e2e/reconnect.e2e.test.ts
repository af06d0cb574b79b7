// The daemon goes away under an open dashboard and comes back on the same port and data dir
// (a restart, an upgrade): the page must say it is reconnecting, keep the last state on
// screen, and come back live by itself, with the token it holds still working: the admin
// token lives in the data dir, so it outlives the process.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium, modelRow, openWatchedPage, screenshot, type WatchedPage } from './support/browser.js';
import { startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

/** The page's reconnect backoff grows to 10 s; a restart takes a few more on a loaded machine. */
const RECONNECT_MS = 45_000;

let dataDir: string;
const daemons: DaemonProcess[] = [];
let browser: Browser;
let watched: WatchedPage;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'llmtray-e2e-reconnect-'));
  const [first, launched] = await Promise.all([startDaemonProcess({ dataDir, startTimeoutMs: 60_000 }), launchChromium()]);
  daemons.push(first);
  browser = launched;
  watched = await openWatchedPage(browser);
});

afterAll(async () => {
  await browser?.close();
  for (const daemon of daemons) await daemon.stop();
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
});

it('shows Reconnecting while the daemon is down and comes back live by itself after a restart on the same port', { timeout: 2 * RECONNECT_MS }, async () => {
  const { page, problems } = watched;
  const first = daemons[0];
  if (first === undefined) throw new Error('beforeAll started no daemon');
  await page.goto(first.dashboardUrl);
  await page.getByRole('status', { name: 'Connection: Live' }).waitFor();

  await first.stop();

  await page.getByRole('status', { name: 'Connection: Reconnecting…' }).waitFor({ timeout: RECONNECT_MS });
  await page.getByRole('alert').filter({ hasText: 'Lost the connection to llmtray' }).waitFor();
  // The last state stays on screen (greyed), not an empty page.
  await modelRow(page, 'demo-chat').waitFor();
  await screenshot(page, 'reconnecting');

  const second = await startDaemonProcess({ dataDir, port: first.port, startTimeoutMs: 60_000 });
  daemons.push(second);
  expect(second.origin).toBe(first.origin);

  await page.getByRole('status', { name: 'Connection: Live' }).waitFor({ timeout: RECONNECT_MS });
  await page.getByRole('alert').filter({ hasText: 'Lost the connection to llmtray' }).waitFor({ state: 'detached' });
  expect(page.url()).toBe(`${first.origin}/`);

  // The same tab, never reloaded, still holds a working token: a command goes through.
  const pin = modelRow(page, 'demo-tiny').getByRole('switch', { name: 'Pin demo-tiny' });
  await pin.click();
  await expect.poll(() => pin.isChecked(), { timeout: 45_000 }).toBe(true);
  expect((await second.state()).models.find((m) => m.id === 'demo-tiny')?.pinned).toBe(true);
  expect(problems).toEqual([]);
});
