// Which Chromium the browser tests take (test/e2e/support/chromium.ts), against real files:
// small shell scripts stand in for a Chromium that answers, one whose libraries are gone,
// one that hangs, and a file that is not executable; the probe really runs each.
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseChromium, mergeBundledArgs, OUR_ARGS } from '../../e2e/support/chromium.js';

let dir: string;
const path = (name: string): string => join(dir, name);

async function script(name: string, body: string, mode = 0o755): Promise<string> {
  await writeFile(path(name), `#!/bin/sh\n${body}\n`);
  await chmod(path(name), mode);
  return path(name);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-chromium-choice-'));
  await script('debian-chromium', `echo 'Chromium 140.0.7339.80 built on Debian GNU/Linux 12 (bookworm)'`);
  await script('other-chromium', `echo 'Chromium 153.0.8010.0'`);
  // What Debian's wrapper says when the chromium package's libraries were removed.
  await script('broken-chromium', `echo '/usr/lib/chromium/chromium: error while loading shared libraries: libnss3.so: cannot open shared object file' >&2; exit 127`);
  await script('silent-chromium', 'exit 0');
  await script('hung-chromium', 'exec sleep 30');
  await script('unexecutable-chromium', `echo 'Chromium 140.0.7339.80'`, 0o644);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('chooseChromium', () => {
  it("takes Debian's when it answers --version", async () => {
    expect(await chooseChromium({ override: undefined, systemPath: path('debian-chromium') })).toEqual({
      source: 'system',
      executablePath: path('debian-chromium'),
      version: 'Chromium 140.0.7339.80 built on Debian GNU/Linux 12 (bookworm)',
    });
  });

  it('takes the bundled one when there is none, and says so', async () => {
    expect(await chooseChromium({ override: undefined, systemPath: path('absent-chromium') })).toEqual({
      source: 'bundled',
      why: `${path('absent-chromium')} is absent`,
    });
  });

  it('takes the bundled one when it is there but broken, with what it said', async () => {
    const choice = await chooseChromium({ override: undefined, systemPath: path('broken-chromium') });
    expect(choice.source).toBe('bundled');
    if (choice.source === 'bundled') expect(choice.why).toBe(`${path('broken-chromium')} exited with 127 on --version: /usr/lib/chromium/chromium: error while loading shared libraries: libnss3.so: cannot open shared object file`);
  });

  it('takes the bundled one when it is not executable, exits 0 without a version, or hangs', async () => {
    const why = async (name: string, timeoutMs?: number): Promise<string> => {
      const choice = await chooseChromium({ override: undefined, systemPath: path(name), ...(timeoutMs === undefined ? {} : { timeoutMs }) });
      return choice.source === 'bundled' ? choice.why : `chose ${choice.source}`;
    };
    expect(await why('unexecutable-chromium')).toBe(`${path('unexecutable-chromium')} is not executable`);
    expect(await why('silent-chromium')).toBe(`${path('silent-chromium')} answered --version with '', which names no version`);
    expect(await why('hung-chromium', 300)).toBe(`${path('hung-chromium')} did not answer --version within 0.3 s`);
  });

  it("takes CHROMIUM over Debian's", async () => {
    expect(await chooseChromium({ override: path('other-chromium'), systemPath: path('debian-chromium') })).toEqual({
      source: 'CHROMIUM',
      executablePath: path('other-chromium'),
      version: 'Chromium 153.0.8010.0',
    });
  });

  it('fails for a CHROMIUM that does not answer instead of testing another browser', async () => {
    await expect(chooseChromium({ override: path('broken-chromium'), systemPath: path('debian-chromium') })).rejects.toThrow(
      `CHROMIUM=${path('broken-chromium')} exited with 127 on --version`,
    );
    await expect(chooseChromium({ override: path('absent-chromium'), systemPath: path('debian-chromium') })).rejects.toThrow(
      `CHROMIUM=${path('absent-chromium')} is absent`,
    );
  });
});

describe('mergeBundledArgs', () => {
  // @sparticuz/chromium 153.0.0's args, as its Chromium.args returns them.
  const theirs = [
    '--ash-no-nudges',
    '--disable-domain-reliability',
    '--disable-print-preview',
    '--disk-cache-size=33554432',
    '--no-default-browser-check',
    '--no-pings',
    '--single-process',
    '--font-render-hinting=none',
    '--disable-features=AudioServiceOutOfProcess,IsolateOrigins,site-per-process',
    '--enable-features=SharedArrayBuffer',
    '--ignore-gpu-blocklist',
    '--in-process-gpu',
    '--use-gl=angle',
    '--use-angle=swiftshader',
    '--enable-unsafe-swiftshader',
    '--allow-running-insecure-content',
    '--disable-setuid-sandbox',
    '--disable-site-isolation-trials',
    '--disable-web-security',
    "--headless='shell'",
    '--no-sandbox',
    '--no-zygote',
  ];

  it('keeps every one of ours and the harmless of theirs, each switch once', () => {
    const merged = mergeBundledArgs(theirs);
    for (const arg of OUR_ARGS) expect(merged).toContain(arg);
    for (const arg of ['--no-zygote', '--disable-setuid-sandbox', '--no-pings', '--disk-cache-size=33554432']) expect(merged).toContain(arg);
    const switches = merged.map((arg) => arg.split('=')[0]);
    expect(switches).toEqual([...new Set(switches)]);
  });

  it('drops what would loosen the page, replace Playwright\'s feature lists, or run one process', () => {
    const merged = mergeBundledArgs(theirs);
    for (const prefix of ['--disable-web-security', '--allow-running-insecure-content', '--disable-site-isolation-trials', '--disable-features', '--enable-features', '--single-process', '--headless', '--use-gl', '--in-process-gpu']) {
      expect(merged.filter((arg) => arg.startsWith(prefix)), prefix).toEqual([]);
    }
  });

  it('lets ours win where both name a switch', () => {
    expect(mergeBundledArgs(['--disk-cache-size=1', '--no-pings'], ['--disk-cache-size=2'])).toEqual(['--no-pings', '--disk-cache-size=2']);
  });
});
