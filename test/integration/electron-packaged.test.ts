// The desktop app as electron-builder packages it, as far as it runs here: the layout
// build/electron-builder.yml describes (test/support/packaged-layout.ts: the `files` selection,
// resources/app.asar written by @electron/asar with the `asarUnpack` folders beside it, the tray
// icons in resources/tray), its main process started from inside the archive under the Electron
// stand-in as a packaged app (app.isPackaged, process.resourcesPath), headless, in demo mode.
// What Electron's asar fs is taken to do is listed in test/support/electron-stand-in/README.md.
import { readFile, rm } from 'node:fs/promises';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as asar from '@electron/asar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAEMON_NODE_FLAGS } from '../../core/daemon/node-flags.js';
import { enginesUsing, eventually, removeDataDir } from '../support/daemon-process.js';
import { launchElectronMain, type ElectronMainProcess, type RecordedMenuItem } from '../support/electron-main-process.js';
import { builderTarget, layOutPackagedApp, readBuilderConfig, selectedFiles, type BuilderConfig, type PackagedLayout } from '../support/packaged-layout.js';

const JS_FLAGS = `--js-flags=${DAEMON_NODE_FLAGS.join(' ')}`;
const { os, arch } = builderTarget();
/** The CPU backend of this machine's target; the GPU ones (hundreds of MB) are selected but left out of this layout. */
const CPU_BACKEND = `node_modules/@node-llama-cpp/${os}-${arch}/`;
const isBackendFile = (file: string): boolean => file.startsWith('node_modules/@node-llama-cpp/');

let base: string;
let config: BuilderConfig;
let selected: string[];
let layout: PackagedLayout;
let app: ElectronMainProcess;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'llmtray-pkg-'));
  config = readBuilderConfig();
  selected = selectedFiles(config);
  layout = await layOutPackagedApp(base, config, selected.filter((file) => !isBackendFile(file) || file.startsWith(CPU_BACKEND)));
  app = launchElectronMain({
    mainEntry: layout.mainEntry,
    cwd: base,
    dataDir: join(base, 'data'),
    recordFile: join(base, 'record.jsonl'),
    configHome: join(base, 'config'),
    env: { HOME: join(base, 'home'), XDG_DATA_HOME: join(base, 'share'), ELECTRON_STAND_IN_PACKAGED: '1' },
  });
  await app.until('the tray lists demo-chat', (records) =>
    records.find((r) => r.what === 'tray-menu' && (r.menu as RecordedMenuItem[]).some((item) => item.label.startsWith('demo-chat — '))),
  120_000);
}, 240_000);

afterAll(async () => {
  app?.kill();
  await removeDataDir(join(base, 'data'));
  await rm(base, { recursive: true, force: true });
});

describe('the packaged layout, as build/electron-builder.yml makes it', () => {
  it('takes the app, its production dependencies and only this target\'s llama.cpp binaries', () => {
    expect(selected).toContain('dist/electron/main.js');
    expect(selected).toContain('dist/core/engine/embedded/main.js');
    expect(selected.some((file) => file.startsWith('node_modules/yaml/'))).toBe(true);
    expect(selected.some((file) => file.startsWith('dist/') && file.endsWith('.map'))).toBe(false);
    expect(selected.some((file) => file.startsWith('node_modules/vitest/') || file.startsWith('node_modules/electron/'))).toBe(false);
    expect(selected.some((file) => file.startsWith(CPU_BACKEND) && file.endsWith('.node'))).toBe(true);
    const otherTargets = selected.filter((file) => isBackendFile(file) && !file.startsWith(`node_modules/@node-llama-cpp/${os}-${arch}`) && file.includes('/bins/'));
    expect(otherTargets).toEqual([]);
  });

  it('keeps the native binaries out of app.asar (in app.asar.unpacked) and the JavaScript in it', () => {
    const addon = selected.find((file) => file.startsWith(CPU_BACKEND) && file.endsWith('.node'))!;
    expect(asar.statFile(layout.archive, addon)).toMatchObject({ unpacked: true });
    expect(asar.statFile(layout.archive, 'dist/core/daemon.js')).not.toMatchObject({ unpacked: true });
    expect(asar.statFile(layout.archive, 'dist/electron/main.js')).not.toMatchObject({ unpacked: true });
  });

  it('gives the app started from the OS menu on Linux the daemon\'s V8 flags (the .desktop file\'s Exec)', () => {
    expect(config.linux.executableArgs).toEqual([JS_FLAGS]);
  });
});

describe('the packaged app, run from resources/app.asar under the stand-in', () => {
  it('starts, with its tray icon from resources/tray', () => {
    expect(String(app.recorded('tray-created')[0]?.image)).toContain(join(layout.resources, 'tray'));
  });

  it('serves /v1/models and a chat on the demo models', async () => {
    const models = (await (await app.api('/v1/models')).json()) as { data: { id: string }[] };
    expect(models.data.map((model) => model.id)).toContain('demo-chat');
    const chat = await app.api('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
    });
    expect(chat.status).toBe(200);
    const answer = (await chat.json()) as { choices: { message: { content: string } }[] };
    expect(typeof answer.choices[0]?.message.content).toBe('string');
  }, 120_000);

  it('runs its engine with ELECTRON_RUN_AS_NODE=1 from the archive, loading llama.cpp from app.asar.unpacked', async () => {
    const [engine] = await eventually('an engine of the packaged app', async () => {
      const engines = await enginesUsing(app.dataDir);
      return engines.length > 0 ? engines : undefined;
    });
    expect(engine!.args).toContain(join(layout.resources, 'app.asar', 'dist', 'core', 'engine', 'embedded', 'main.js'));
    const environ = (await readFile(`/proc/${engine!.pid}/environ`, 'utf8')).split('\0');
    expect(environ).toContain('ELECTRON_RUN_AS_NODE=1');
    const nativeFiles = [...new Set((await readFile(`/proc/${engine!.pid}/maps`, 'utf8')).split('\n').map((line) => line.split(/\s+/).slice(5).join(' ')).filter((path) => path.includes('node-llama-cpp')))];
    expect(nativeFiles.some((path) => path.endsWith('.node'))).toBe(true);
    const unpacked = realpathSync(join(layout.resources, 'app.asar.unpacked'));
    for (const path of nativeFiles) expect(path.startsWith(unpacked)).toBe(true);
  }, 120_000);

  it('sets Start at Login to relaunch the packaged binary with the daemon\'s V8 flags', async () => {
    await app.control('click', { path: ['Start at Login'] });
    const entry = await eventually('the autostart entry', async () => readFile(join(base, 'config', 'autostart', 'llmtray.desktop'), 'utf8').catch(() => undefined));
    expect(entry).toContain(`Exec="${process.execPath}" "${JS_FLAGS}"\n`);
  });
});
