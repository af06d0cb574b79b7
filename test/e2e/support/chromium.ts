// Which Chromium the browser tests drive, decided once per run (global-setup.ts).
//
// Debian's /usr/bin/chromium when it is there and answers `--version`: the browser a user's
// distribution ships, and the one .ci/run installs. Otherwise the Chromium inside the
// @sparticuz/chromium dev dependency, so that `npm ci && npm test` needs nothing from apt
// (issue 13: on a fresh machine all three browser files failed with "executable doesn't
// exist at /usr/bin/chromium"). CHROMIUM=/path overrides both and is never second-guessed:
// one that does not answer fails the run instead of quietly testing another browser.
//
// "Answers --version", not "exists": Debian's /usr/bin/chromium is a wrapper script, and one
// whose binary or libraries are gone exists too; it would fail every file at launch instead
// of falling back. Nothing here imports vitest: global setup runs outside the test workers.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const SYSTEM_CHROMIUM = '/usr/bin/chromium';
const REPO_ROOT = join(import.meta.dirname, '..', '..', '..');

/** Headless, no sandbox (CI runs as root in a container), nothing that phones home. */
export const OUR_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** How the workers launch it: plain data, because global setup hands it over by value. */
export interface ChromiumLaunch {
  executablePath: string;
  args: string[];
  /** Added to the browser's environment (the bundled build's libraries and fonts). */
  env: Record<string, string>;
  /** One line for the run's stderr: which Chromium, which version, and why that one. */
  description: string;
}

export type ChromiumChoice =
  | { source: 'CHROMIUM' | 'system'; executablePath: string; version: string }
  | { source: 'bundled'; why: string };

type VersionProbe = { answered: true; version: string } | { answered: false; reason: string };

/**
 * Runs `path --version` and says what came of it. Blocks until it exits or for timeoutMs
 * (then it is killed); never rejects: every failure becomes a reason a person can act on.
 */
function probeVersion(path: string, timeoutMs: number, env: Record<string, string> = {}): Promise<VersionProbe> {
  return new Promise((resolve) => {
    execFile(path, ['--version'], { timeout: timeoutMs, killSignal: 'SIGKILL', env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      const version = stdout.trim();
      if (error === null && /\d+\.\d+/.test(version)) return resolve({ answered: true, version });
      if (error === null) return resolve({ answered: false, reason: `answered --version with '${version.slice(0, 80)}', which names no version` });
      const lastLine = stderr.trim().split('\n').at(-1)?.slice(0, 200) ?? '';
      const said = lastLine === '' ? '' : `: ${lastLine}`;
      if (error.code === 'ENOENT') resolve({ answered: false, reason: 'is absent' });
      else if (error.code === 'EACCES') resolve({ answered: false, reason: 'is not executable' });
      else if (error.killed) resolve({ answered: false, reason: `did not answer --version within ${timeoutMs / 1000} s` });
      else if (typeof error.code === 'number') resolve({ answered: false, reason: `exited with ${error.code} on --version${said}` });
      else resolve({ answered: false, reason: `could not be run (${error.message.split('\n')[0]})${said}` });
    });
  });
}

/**
 * The choice itself: `override` (CHROMIUM) when set, else `systemPath` when it answers
 * --version, else the bundled one with the reason the system one was passed over. Blocks
 * for the probes (at most timeoutMs each); rejects only for an override that does not answer.
 */
export async function chooseChromium(options: { override: string | undefined; systemPath: string; timeoutMs?: number }): Promise<ChromiumChoice> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  if (options.override !== undefined) {
    const probe = await probeVersion(options.override, timeoutMs);
    if (!probe.answered) throw new Error(`CHROMIUM=${options.override} ${probe.reason}; unset CHROMIUM to use ${options.systemPath} or the bundled Chromium`);
    return { source: 'CHROMIUM', executablePath: options.override, version: probe.version };
  }
  const probe = await probeVersion(options.systemPath, timeoutMs);
  if (probe.answered) return { source: 'system', executablePath: options.systemPath, version: probe.version };
  return { source: 'bundled', why: `${options.systemPath} ${probe.reason}` };
}

/**
 * Switches of @sparticuz/chromium's `args` that the tests must not inherit. Its list is
 * written for AWS Lambda; what is left (no zygote, no pings, no print preview, a font
 * hinting, a disk cache size) is harmless here and passed on.
 */
const REFUSED_BUNDLED_SWITCHES = new Set([
  // The dashboard is tested under the rules a user's browser keeps: openWatchedPage counts
  // Content-Security-Policy violations, and these loosen what a page may do.
  '--disable-web-security',
  '--allow-running-insecure-content',
  '--disable-site-isolation-trials',
  // Theirs turn site isolation off, and Playwright passes lists of its own: a repeated
  // switch keeps only its last value, so theirs would replace Playwright's.
  '--disable-features',
  '--enable-features',
  // Lambda forbids the prctl a renderer process needs; here renderers get their own
  // processes as in Debian's build, and one crash does not take every context with it.
  '--single-process',
  // Playwright passes its own --headless; theirs carries the shell's quotes ('shell').
  '--headless',
  // A software GL stack for WebGL on Lambda: ours say --disable-gpu, the dashboard draws none.
  '--use-gl',
  '--use-angle',
  '--enable-unsafe-swiftshader',
  '--ignore-gpu-blocklist',
  '--in-process-gpu',
]);

/** The bundled build's args: theirs without the refused switches, then ours, each switch once (ours win). */
export function mergeBundledArgs(theirs: readonly string[], ours: readonly string[] = OUR_ARGS): string[] {
  const switchOf = (arg: string): string => arg.split('=', 1)[0] ?? arg;
  const taken = new Set(ours.map(switchOf));
  const kept: string[] = [];
  for (const arg of theirs) {
    const name = switchOf(arg);
    if (REFUSED_BUNDLED_SWITCHES.has(name) || taken.has(name)) continue;
    taken.add(name);
    kept.push(arg);
  }
  return [...kept, ...ours];
}

export interface BundledChromium {
  executablePath: string;
  version: string;
  /**
   * LD_LIBRARY_PATH: the libraries it links (NSS, NSPR, expat), which a fresh Debian does
   * not have; FONTCONFIG_PATH: the system's fonts where there are any, and the bundled Open
   * Sans where there are none.
   */
  env: Record<string, string>;
  args: string[];
}

/**
 * Unpacks @sparticuz/chromium's browser into REPO/.chromium/VERSION/ (gitignored) and says
 * how to launch it. Blocks a few seconds the first time (brotli over ~70 MB), then finds it
 * there. Rejects when the package is missing or its browser does not answer --version.
 *
 * Why not the package's own place, /tmp/chromium: executablePath() returns that path
 * whenever it exists, whether it is a half-written file from an interrupted run, another
 * version's, or one another local user put there; and two runs unpacking at once each see
 * the other's half-written file. Here every unpack goes to a fresh folder that is renamed
 * into place only after its browser answered; rename is atomic, so a folder at the final
 * path is always whole, and the loser of a race uses the winner's.
 */
export async function unpackBundledChromium(root: string = REPO_ROOT): Promise<BundledChromium> {
  const packageDir = join(root, 'node_modules', '@sparticuz', 'chromium');
  const { version: packageVersion } = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8')) as { version: string };
  const home = join(root, '.chromium');
  const final = join(home, packageVersion);
  const env = bundledEnv(final);
  if (!existsSync(join(final, 'chromium'))) {
    await mkdir(home, { recursive: true });
    const staging = await mkdtemp(join(home, 'unpacking-'));
    try {
      await unpackInto(staging, root, join(packageDir, 'bin', 'al2023.tar.br'));
      // With the staged libraries: the final folder does not exist yet.
      const probe = await probeVersion(join(staging, 'chromium'), 60_000, bundledEnv(staging));
      if (!probe.answered) throw new Error(`the Chromium of @sparticuz/chromium ${packageVersion}, unpacked in ${staging}, ${probe.reason}`);
      await writeFile(join(staging, 'fonts.conf'), fontsConf(final));
      await rename(staging, final).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST' && error.code !== 'ENOTEMPTY') throw error;
      });
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
  const executablePath = join(final, 'chromium');
  const probe = await probeVersion(executablePath, 60_000, env);
  if (!probe.answered) throw new Error(`the Chromium of @sparticuz/chromium ${packageVersion} at ${executablePath} ${probe.reason}; delete ${final} to unpack it again`);
  const { default: bundled } = await import('@sparticuz/chromium');
  return { executablePath, version: `${probe.version} (@sparticuz/chromium ${packageVersion})`, env, args: mergeBundledArgs(bundled.args) };
}

/** The bundled browser's environment, unpacked in `dir`: its libraries first, its fonts.conf. */
function bundledEnv(dir: string): Record<string, string> {
  const inherited = process.env['LD_LIBRARY_PATH'];
  const libraries = join(dir, 'al2023', 'lib');
  return {
    LD_LIBRARY_PATH: inherited === undefined || inherited === '' ? libraries : `${libraries}:${inherited}`,
    FONTCONFIG_PATH: dir,
  };
}

/**
 * The package unpacks into os.tmpdir(), which reads TMPDIR: a child node with TMPDIR set to
 * the staging folder puts every file there without touching this process's environment.
 * Besides the browser it unpacks the libraries it links (the package does that by itself
 * only on Amazon Linux).
 */
function unpackInto(staging: string, root: string, librariesArchive: string): Promise<void> {
  const script = `
    const { default: chromium, inflate } = await import('@sparticuz/chromium');
    await Promise.all([chromium.executablePath(), inflate(process.argv[1])]);`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script, librariesArchive], { cwd: root, env: { ...process.env, TMPDIR: staging }, timeout: 300_000 }, (error, _stdout, stderr) => {
      if (error) reject(new Error(`could not unpack @sparticuz/chromium into ${staging}: ${error.message}\n${stderr}`));
      else resolve();
    });
  });
}

/** Its fonts.conf names /tmp/fonts; ours names where they are, after the system's config. */
function fontsConf(final: string): string {
  return [
    '<?xml version="1.0"?>',
    '<!DOCTYPE fontconfig SYSTEM "fonts.dtd">',
    '<fontconfig>',
    '  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>',
    `  <dir>${join(final, 'fonts')}</dir>`,
    `  <cachedir>${join(final, 'fonts-cache')}</cachedir>`,
    '</fontconfig>',
    '',
  ].join('\n');
}

/** CHROMIUM, else Debian's, else the bundled one: what the workers launch, and the line to say so. */
export async function resolveChromium(): Promise<ChromiumLaunch> {
  const choice = await chooseChromium({ override: process.env['CHROMIUM'], systemPath: SYSTEM_CHROMIUM });
  if (choice.source !== 'bundled') {
    const whose = choice.source === 'CHROMIUM' ? `CHROMIUM=${choice.executablePath}` : `Debian's ${choice.executablePath}`;
    return { executablePath: choice.executablePath, args: [...OUR_ARGS], env: {}, description: `${whose}: ${choice.version}` };
  }
  const bundled = await unpackBundledChromium();
  return {
    executablePath: bundled.executablePath,
    args: bundled.args,
    env: bundled.env,
    description: `the bundled ${bundled.executablePath}: ${bundled.version}, because ${choice.why}`,
  };
}
