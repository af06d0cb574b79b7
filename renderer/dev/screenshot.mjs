#!/usr/bin/env node
// Screenshots of the dashboard on the fixture bridge, at the tray window's 900×600, in light
// and dark. Builds renderer/dev/fixture.html to dist/renderer-fixture (never into
// dist/renderer), serves it with Vite's preview server, and drives Debian's Chromium.
//
//   node renderer/dev/screenshot.mjs [outDir]      (default docs/screenshots)
//
// Why Vite's build and preview APIs rather than a hand-written static server: the fixture
// needs the same transform as the real build, and this file stays free of Node built-ins, as
// the layering lint asks of everything under renderer/.
import { chromium } from 'playwright-core';
import { build, preview } from 'vite';

const rendererDir = new URL('..', import.meta.url).pathname;
const repoDir = new URL('../..', import.meta.url).pathname;
const fixtureOut = `${repoDir}dist/renderer-fixture`;
const shotsDir = process.argv[2] ?? `${repoDir}docs/screenshots`;
const configFile = `${rendererDir}vite.config.ts`;

// The daemon's Content-Security-Policy (core/admin/static-files.ts DASHBOARD_CSP, which this
// file may not import). Serving the fixture under it makes any inline script or style the
// build emits show up as a console error, which fails this script.
const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const SHOTS = [
  { name: 'models', query: 'scenario=showcase' },
  { name: 'recovery', query: 'scenario=showcase&tab=recovery' },
  { name: 'why', query: 'scenario=showcase&tab=why' },
  { name: 'logs', query: 'scenario=showcase&tab=logs' },
  { name: 'connect', query: 'scenario=showcase&tab=connect' },
  { name: 'empty', query: 'scenario=empty' },
  { name: 'config-error', query: 'scenario=config-error' },
  { name: 'reconnecting', query: 'scenario=showcase&lost=1' },
  { name: 'cpu', query: 'scenario=cpu' },
  { name: 'placed', query: 'scenario=placed' },
];

await build({
  configFile,
  logLevel: 'warn',
  build: { outDir: fixtureOut, emptyOutDir: true, rollupOptions: { input: `${rendererDir}dev/fixture.html` } },
});
const server = await preview({ configFile, logLevel: 'warn', build: { outDir: fixtureOut }, preview: { port: 4179, strictPort: false, headers: { 'content-security-policy': DASHBOARD_CSP } } });
const base = server.resolvedUrls?.local[0];
if (base === undefined) throw new Error('Vite preview did not report a URL.');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const problems = [];
try {
  for (const scheme of ['light', 'dark']) {
    const page = await browser.newPage({ viewport: { width: 900, height: 600 }, colorScheme: scheme, reducedMotion: 'reduce' });
    page.on('pageerror', (error) => problems.push(`${scheme}: ${error.message}`));
    page.on('console', (message) => message.type() === 'error' && problems.push(`${scheme}: ${message.text()}`));
    for (const shot of SHOTS) {
      await page.goto(`${base}dev/fixture.html?${shot.query}`);
      await page.waitForSelector('.app, .fullscreen');
      if (shot.name === 'models') {
        // Show the tooltip too: it is part of what the picture has to get right.
        await page.hover('.memory-bar-svg .segment-other-programs');
      }
      await page.screenshot({ path: `${shotsDir}/${shot.name}-${scheme}.png` });
    }
    await page.close();
  }
} finally {
  await browser.close();
  await new Promise((resolve) => server.httpServer.close(resolve));
}
if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`screenshots written to ${shotsDir}`);
