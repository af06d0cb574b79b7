import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chooseLaunchMode, findElectronBinary, headlessCommand } from '../../../electron/launch-mode.js';
import { DAEMON_NODE_FLAGS } from '../../../core/daemon/node-flags.js';

describe('chooseLaunchMode', () => {
  const display = { DISPLAY: ':0' };
  it.each([
    ['linux with X11 and Electron', 'linux', display, true, 'electron'],
    ['linux with Wayland and Electron', 'linux', { WAYLAND_DISPLAY: 'wayland-0' }, true, 'electron'],
    ['linux without a display', 'linux', {}, true, 'no-display'],
    ['linux with an empty DISPLAY', 'linux', { DISPLAY: '' }, true, 'no-display'],
    ['freebsd without a display', 'freebsd', {}, true, 'no-display'],
    ['macOS needs no DISPLAY', 'darwin', {}, true, 'electron'],
    ['Windows needs no DISPLAY', 'win32', {}, true, 'electron'],
    ['no Electron binary', 'linux', display, false, 'no-electron'],
    ['no Electron binary on macOS', 'darwin', {}, false, 'no-electron'],
    ['neither: the binary is named first', 'linux', {}, false, 'no-electron'],
    ['headless asked for', 'darwin', { LLMTRAY_HEADLESS: '1' }, true, 'requested'],
  ] as const)('%s', (_name, platform, env, electronBinaryExists, expected) => {
    const mode = chooseLaunchMode({ platform, env, electronBinaryExists });
    expect(mode.mode === 'electron' ? 'electron' : mode.cause).toBe(expected);
    if (mode.mode === 'headless') expect(mode.message.length).toBeGreaterThan(20);
  });
});

describe('findElectronBinary', () => {
  const pkg = '/app/node_modules/electron';
  const files = (present: Record<string, string>) => ({
    exists: (path: string) => path in present,
    readText: (path: string) => present[path] ?? null,
  });

  it('finds the binary that path.txt names under dist/', () => {
    const fs = files({ [`${pkg}/path.txt`]: 'electron\n', [`${pkg}/dist/electron`]: '' });
    expect(findElectronBinary({ env: {}, electronPackageDir: pkg, ...fs })).toEqual({ path: `${pkg}/dist/electron`, problem: null });
  });

  it('says the download failed when there is no path.txt (this machine)', () => {
    const found = findElectronBinary({ env: {}, electronPackageDir: pkg, ...files({}) });
    expect(found.path).toBeNull();
    expect(found.problem).toBe(`${pkg}/path.txt is missing: the binary download in electron's postinstall failed or was skipped`);
  });

  it('says which file is missing when path.txt points at nothing', () => {
    const found = findElectronBinary({ env: {}, electronPackageDir: pkg, ...files({ [`${pkg}/path.txt`]: 'Electron.app/Contents/MacOS/Electron' }) });
    expect(found.problem).toBe(`the electron package says its binary is ${pkg}/dist/Electron.app/Contents/MacOS/Electron does not exist`);
  });

  it('honours LLMTRAY_ELECTRON_BINARY, then ELECTRON_OVERRIDE_DIST_PATH', () => {
    const fs = files({ '/opt/electron/electron': '', '/custom/electron': '' });
    expect(findElectronBinary({ env: { LLMTRAY_ELECTRON_BINARY: '/custom/electron', ELECTRON_OVERRIDE_DIST_PATH: '/opt/electron' }, electronPackageDir: pkg, ...fs }).path).toBe('/custom/electron');
    expect(findElectronBinary({ env: { ELECTRON_OVERRIDE_DIST_PATH: '/opt/electron' }, electronPackageDir: pkg, ...fs }).path).toBe('/opt/electron/electron');
  });

  it('says the package is missing', () => {
    expect(findElectronBinary({ env: {}, electronPackageDir: null, ...files({}) })).toEqual({ path: null, problem: 'the electron package is not installed' });
  });
});

describe('headlessCommand', () => {
  it('runs the CLI\'s serve under this Node, with the launcher\'s arguments', () => {
    expect(headlessCommand({ env: {}, nodePath: '/usr/bin/node', appRoot: '/app', args: ['--demo'] })).toEqual([
      '/usr/bin/node',
      '--max-semi-space-size=4',
      join('/app', 'dist', 'core', 'cli.js'),
      'serve',
      '--demo',
    ]);
  });

  it('takes LLMTRAY_HEADLESS_CMD as a JSON argv, and names it when it is not one', () => {
    expect(headlessCommand({ env: { LLMTRAY_HEADLESS_CMD: '["sh","-c","true"]' }, nodePath: 'node', appRoot: '/app', args: ['--demo'] })).toEqual(['sh', '-c', 'true', '--demo']);
    for (const bad of ['sh -c true', '[]', '[1]', '{"a":1}']) {
      expect(() => headlessCommand({ env: { LLMTRAY_HEADLESS_CMD: bad }, nodePath: 'node', appRoot: '/app', args: [] })).toThrow(
        `LLMTRAY_HEADLESS_CMD must be a JSON array of strings such as ["node","server.js"]; got ${bad}`,
      );
    }
  });
});

describe('the launcher (dist/electron/launch.js), run for real', () => {
  const launcher = resolve('dist/electron/launch.js');
  const dir = mkdtempSync(join(tmpdir(), 'llmtray-launch-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A program that prints how it was started, as JSON, and exits with `code`. */
  function recorder(name: string, code: number): string {
    const path = join(dir, name);
    writeFileSync(
      path,
      `#!${process.execPath}\nconsole.log('RAN ' + JSON.stringify({ argv: process.argv.slice(2), runAsNode: process.env.ELECTRON_RUN_AS_NODE ?? null }));\nprocess.exit(${code});\n`,
    );
    chmodSync(path, 0o755);
    return path;
  }

  function launch(env: Record<string, string>) {
    if (!existsSync(launcher)) throw new Error(`${launcher} is missing: run npm run build first (npm test does)`);
    const base = { ...process.env };
    for (const name of ['DISPLAY', 'WAYLAND_DISPLAY', 'LLMTRAY_HEADLESS', 'LLMTRAY_HEADLESS_CMD', 'LLMTRAY_ELECTRON_BINARY', 'ELECTRON_OVERRIDE_DIST_PATH']) delete base[name];
    const result = spawnSync(process.execPath, [launcher, '--demo'], { env: { ...base, ...env }, encoding: 'utf8', timeout: 30_000 });
    const ran = /RAN (.*)/.exec(result.stdout)?.[1];
    return { ...result, ran: ran === undefined ? null : (JSON.parse(ran) as { argv: string[]; runAsNode: string | null }) };
  }

  it('falls back to the headless daemon when the Electron binary is missing, and says why', () => {
    const missing = join(dir, 'no-such-electron');
    const headless = recorder('headless.mjs', 3);
    const result = launch({ DISPLAY: ':0', LLMTRAY_ELECTRON_BINARY: missing, LLMTRAY_HEADLESS_CMD: JSON.stringify([process.execPath, headless]) });
    expect(result.stdout).toContain(`llmtray: the Electron binary is not available here (LLMTRAY_ELECTRON_BINARY names ${missing} does not exist); running headless`);
    expect(result.ran).toEqual({ argv: ['--demo'], runAsNode: null });
    expect(result.status).toBe(3);
  });

  it('starts Electron with the daemon’s V8 flags, the app folder and the arguments where it can, without ELECTRON_RUN_AS_NODE', () => {
    const electron = recorder('electron', 0);
    const result = launch({ DISPLAY: ':0', LLMTRAY_ELECTRON_BINARY: electron, ELECTRON_RUN_AS_NODE: '1', LLMTRAY_HEADLESS_CMD: '["false"]' });
    expect(result.stdout).not.toContain('running headless');
    expect(result.ran).toEqual({ argv: [`--js-flags=${DAEMON_NODE_FLAGS.join(' ')}`, resolve('.'), '--demo'], runAsNode: null });
    expect(result.status).toBe(0);
  });

  it('refuses a malformed LLMTRAY_HEADLESS_CMD with exit code 2', () => {
    const result = launch({ LLMTRAY_HEADLESS: '1', LLMTRAY_HEADLESS_CMD: 'node server.js' });
    expect(result.stderr).toContain('LLMTRAY_HEADLESS_CMD must be a JSON array of strings');
    expect(result.status).toBe(2);
  });
});
