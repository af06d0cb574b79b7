// Chromium under playwright-core, set up the same way for every browser test.
//
// Why playwright-core and not @playwright/test: the project has one test runner (vitest), and
// Playwright cannot download its own browsers on the project's machines; playwright-core
// drives a Chromium that is already here: which one, global-setup.ts decides once per run
// (chromium.ts says why). Waits are Playwright's own (locator.waitFor) or vitest's
// expect.poll, each with a deadline that only bounds a failure: nothing here sleeps.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { inject } from 'vitest';

export const SCREENSHOT_DIR = join(import.meta.dirname, '..', '..', '..', 'test-results', 'e2e');

/** Headless, with the executable, switches and environment global setup chose. */
export function launchChromium(): Promise<Browser> {
  const { executablePath, args, env } = inject('chromium');
  return chromium.launch({ executablePath, headless: true, args, env: { ...process.env, ...env } });
}

export interface WatchedPage {
  context: BrowserContext;
  page: Page;
  /**
   * What went wrong inside the page: uncaught exceptions and console errors other than a
   * failed resource load (a stopped daemon and a refused session are expected to log those).
   * A Content-Security-Policy violation lands here, which is how an inline script or style
   * in the built dashboard would show.
   */
  problems: string[];
}

/** A page in a fresh context: no cookies, no session storage from another test. */
export async function openWatchedPage(browser: Browser): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: { width: 1180, height: 640 }, colorScheme: 'light', reducedMotion: 'reduce' });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(`console: ${message.text()}`);
  });
  return { context, page, problems };
}

/** Saves test-results/e2e/NAME.png (an artifact for a person reading a failed run). */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

/** A model's row in the Models tab, found the way a person finds it: by its name. */
export function modelRow(page: Page, modelId: string): Locator {
  return page.getByRole('list', { name: 'Models' }).getByRole('listitem', { name: modelId, exact: true });
}

/** The figure under a term in the memory totals ("Used", "Budget", "Left"), in bytes. */
export async function memoryFigure(page: Page, term: 'Used' | 'Budget' | 'Left'): Promise<number> {
  const memory = page.getByRole('region', { name: 'Memory' });
  const pair = memory.locator('div').filter({ has: page.getByRole('term').filter({ hasText: new RegExp(`^${term}$`) }) });
  const text = await pair.getByRole('definition').first().innerText();
  return parseBytes(text);
}

const UNITS: Record<string, number> = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4 };

/** "190 MiB" → bytes; the dashboard's own format (renderer/src/format/format.ts formatBytes). */
export function parseBytes(text: string): number {
  const match = /([\d.,]+)\s*(B|KiB|MiB|GiB|TiB)/.exec(text);
  const unit = match?.[2] === undefined ? undefined : UNITS[match[2]];
  if (match?.[1] === undefined || unit === undefined) throw new Error(`not a byte figure: '${text}'`);
  return Number(match[1].replace(/,/g, '')) * unit;
}
