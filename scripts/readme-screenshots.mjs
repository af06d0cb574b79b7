#!/usr/bin/env node
// The README's screenshots, from the real app: `llmtray serve --demo` (the built daemon, its
// embedded engine and generated models) and its dashboard in Chromium, light and dark.
//
//   npm run screenshots:readme          (builds first)   → docs/screenshots/dashboard-{light,dark}.png,
//                                                          activity-{light,dark}.png
//   node scripts/readme-screenshots.mjs [outDir]         (with dist/ already built)
//
// Why the real daemon and not the fixture pages (renderer/dev/screenshot.mjs): the README shows
// a newcomer what they will see after `npm start`, so the picture must be what the daemon really
// says — its reasons, its numbers, llama.cpp's own error — not what a fixture says it would.
// The scene: demo-broken quarantined (its corrupt file, with Retry), demo-chat pinned and ready
// with its draft, demo-tiny requested and left out with the plan's reason. It is set up through
// the admin API, the way the CLI would, and the script waits for each state rather than for time.
//
// Chromium: CHROMIUM=/path when set, else Debian's /usr/bin/chromium (what .ci/run installs).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const repoDir = new URL('..', import.meta.url).pathname;
const cliEntry = join(repoDir, 'dist', 'core', 'cli.js');
const outDir = process.argv[2] ?? join(repoDir, 'docs', 'screenshots');
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
/** A bound for what the daemon does on its own on a slow machine; only a failure waits this long. */
const STATE_TIMEOUT_MS = 120_000;

if (!existsSync(cliEntry)) stop(`${cliEntry} is missing: run \`npm run build\` first (or \`npm run screenshots:readme\`).`);
if (!existsSync(executablePath)) stop(`no Chromium at ${executablePath}: install Debian's chromium or set CHROMIUM=/path.`);

const dataDir = await mkdtemp(join(tmpdir(), 'llmtray-screenshots-'));
const daemon = spawn(process.execPath, [cliEntry, 'serve', '--demo', '--data-dir', dataDir, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
let daemonLog = '';
daemon.stderr.setEncoding('utf8').on('data', (text) => (daemonLog += text));
const exited = new Promise((resolve) => daemon.once('exit', resolve));

let browser;
try {
  const { origin } = await waitFor('the daemon to write daemon.json', () => {
    try {
      const info = JSON.parse(readFileSync(join(dataDir, 'daemon.json'), 'utf8'));
      return info.pid === daemon.pid ? info : undefined;
    } catch {
      return undefined; // not written yet
    }
  });
  const token = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
  const api = async (path, method = 'GET') => {
    const response = await fetch(`${origin}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
    if (!response.ok) fail(`${method} ${path} answered ${response.status}: ${await response.text()}`);
    return response.json();
  };
  const status = async (id) => (await api('/api/state')).models.find((m) => m.id === id)?.status;

  // Quarantine first: with demo-chat pinned, the budget has no room left to launch demo-broken.
  await api('/api/models/demo-broken/load', 'POST');
  await waitFor('demo-broken to be quarantined', async () => ((await status('demo-broken'))?.state === 'quarantined' ? true : undefined));
  await api('/api/models/demo-chat/pin', 'POST');
  await waitFor('demo-chat to be ready', async () => ((await status('demo-chat'))?.state === 'ready' ? true : undefined));
  // Load, not a chat request: a refused request keeps demo-tiny wanted for seconds only, a Load for its idle time.
  await api('/api/models/demo-tiny/load', 'POST');
  await waitFor("demo-tiny to carry the plan's reason", async () => ((await status('demo-tiny'))?.unschedulableReason ? true : undefined));
  // The Activity tab's scene: what a local app's requests cost, answered (streamed and whole) and refused, as they really went.
  const chat = (body) => fetch(`${origin}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.text());
  for (const [content, stream] of [['Say hello.', false], ['Count to five.', true], ['Name a colour.', true], ['Say hello.', false]]) {
    await chat({ model: 'chat', max_tokens: 24, stream, messages: [{ role: 'user', content }] });
  }
  await chat({ model: 'demo-tiny', max_tokens: 8, messages: [{ role: 'user', content: 'Hi.' }] });
  await chat({ model: 'demo-chatt', messages: [{ role: 'user', content: 'Hi.' }] });
  await waitFor('the six requests to be recorded', async () => ((await api('/api/activity')).requests.length >= 6 ? true : undefined));

  browser = await chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  await mkdir(outDir, { recursive: true });
  const problems = [];
  for (const scheme of ['light', 'dark']) {
    const context = await browser.newContext({ viewport: { width: 1180, height: 600 }, colorScheme: scheme, reducedMotion: 'reduce' });
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`${scheme}: ${error.message}`));
    page.on('console', (message) => message.type() === 'error' && problems.push(`${scheme}: ${message.text()}`));
    await page.goto(`${origin}/#token=${token}`);
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    const models = page.getByRole('list', { name: 'Models' });
    await models.getByRole('group', { name: 'Why demo-broken is quarantined' }).waitFor();
    await models.getByRole('list', { name: 'Why demo-tiny was left out' }).waitFor();
    await models.getByRole('listitem', { name: 'demo-chat', exact: true }).getByText('Ready', { exact: true }).waitFor();
    const path = join(outDir, `dashboard-${scheme}.png`);
    await page.screenshot({ path });
    console.log(`wrote ${path}`);
    await page.getByRole('tab', { name: 'Activity' }).click();
    await page.getByRole('table', { name: 'Requests', exact: true }).getByRole('row').nth(6).waitFor();
    const activityPath = join(outDir, `activity-${scheme}.png`);
    await page.screenshot({ path: activityPath });
    console.log(`wrote ${activityPath}`);
    await context.close();
  }
  if (problems.length > 0) fail(`the page reported problems:\n${problems.join('\n')}`);
} catch (error) {
  // Said here, and the finally below still stops the daemon: a failure never leaves it running.
  process.exitCode = 1;
  console.error(`readme-screenshots: ${error instanceof Error ? error.message : String(error)}`);
} finally {
  await browser?.close();
  daemon.kill('SIGTERM');
  const timer = setTimeout(() => daemon.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
  await rm(dataDir, { recursive: true, force: true });
}

/** Polls `probe` until it returns something other than undefined; fails with the daemon's log past the bound. */
async function waitFor(what, probe) {
  const deadline = Date.now() + STATE_TIMEOUT_MS;
  for (;;) {
    if (daemon.exitCode !== null) fail(`the daemon exited (code ${daemon.exitCode}) while waiting for ${what}:\n${daemonLog}`);
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) fail(`not within ${STATE_TIMEOUT_MS / 1000} s: ${what}\n${daemonLog.split('\n').slice(-30).join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Inside the run: throws, so that the daemon is stopped before the script ends. */
function fail(message) {
  throw new Error(message);
}

/** Before anything started: says why and ends. */
function stop(message) {
  console.error(`readme-screenshots: ${message}`);
  process.exit(1);
}
