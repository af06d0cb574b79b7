// Add model as a person uses it: a real daemon whose HF_ENDPOINT is the Hub stand-in
// (test/support/hub-standin/), Debian's Chromium, the page driven by role and accessible name.
// Search, open a repo, read how each quant would run here, pull one, watch it finish, and find it
// among the models, served under the name it was pulled as.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { launchChromium, openWatchedPage, screenshot, type WatchedPage } from './support/browser.js';
import { startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';
import { SIZES_REPO, TINY_REPO, demoRepos } from '../support/hub-standin/demo-repos.js';
import { startHubStandIn, type HubStandIn } from '../support/hub-standin/hub-standin.js';

let workDir: string;
let hub: HubStandIn;
let daemon: DaemonProcess;
let browser: Browser;
const pages: WatchedPage[] = [];

beforeAll(async () => {
  hub = await startHubStandIn(await demoRepos());
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-e2e-add-model-'));
  const hfHome = join(workDir, 'hf');
  await mkdir(join(hfHome, 'hub'), { recursive: true });
  const config = join(workDir, 'config.yaml');
  await writeFile(config, `modelDirs: [${JSON.stringify(join(hfHome, 'hub'))}]\nengines:\n  warmSpare: false\n`);
  [daemon, browser] = await Promise.all([
    startDaemonProcess({ dataDir: join(workDir, 'data'), config, env: { HF_ENDPOINT: hub.url, HF_HOME: hfHome }, startTimeoutMs: 60_000 }),
    launchChromium(),
  ]);
});

afterAll(async () => {
  await browser?.close();
  await daemon?.stop();
  await hub?.close();
  if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
});

afterEach(() => {
  for (const { problems } of pages) expect(problems).toEqual([]);
});

async function open(): Promise<Page> {
  const watched = await openWatchedPage(browser);
  pages.push(watched);
  return watched.page;
}

it('searches the Hub, shows how each quant would run here, pulls one and serves it under its hf.co name', async () => {
  const page = await open();
  await page.goto(daemon.dashboardUrl);
  await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
  await page.getByRole('tab', { name: 'Add model' }).click();

  await page.getByRole('searchbox').fill('sizes');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('list', { name: 'Models found' }).getByRole('button', { name: SIZES_REPO }).click();
  const quants = page.getByRole('table', { name: `Quants of ${SIZES_REPO}` });
  await quants.waitFor();
  const rows = await quants.getByRole('row').allInnerTexts();
  // Largest first, each marked by the daemon's own placement on this machine, whatever its GPUs.
  expect(rows.slice(1).map((row) => row.split('\t')[0])).toEqual(['F16', 'Q4_K_M', 'Q2_K']);
  for (const row of rows.slice(1)) expect(row).toMatch(/Whole on GPU|Partly in RAM|CPU only|Too big/);
  await screenshot(page, 'add-model-quants');

  // Then a small model, pulled from its row, followed to its end.
  await page.getByRole('searchbox').fill('tiny');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('list', { name: 'Models found' }).getByRole('button', { name: TINY_REPO }).click();
  await page.getByRole('button', { name: `Pull hf.co/${TINY_REPO}:Q4_K_M` }).click();
  const pulls = page.getByRole('list', { name: 'Pulls' });
  await pulls.getByText(`done: pulled; served as hf.co/${TINY_REPO}:Q4_K_M`).waitFor({ timeout: 60_000 });

  // Served at once under that name: the daemon lists it with the alias.
  const state = await daemon.state();
  expect(state.models.find((m) => m.aliases.includes(`hf.co/${TINY_REPO}:Q4_K_M`))).toBeDefined();
});
