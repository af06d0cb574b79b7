import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DAEMON_NODE_FLAGS } from '../../../core/daemon/node-flags.js';
import { createLoginItem, linuxAutostartEntry, relaunchCommand, type LoginItemApp } from '../../../electron/login-item.js';

function fakeApp() {
  let openAtLogin = false;
  const calls: unknown[] = [];
  const app: LoginItemApp = {
    getLoginItemSettings: () => ({ openAtLogin }),
    setLoginItemSettings: (settings) => {
      calls.push(settings);
      openAtLogin = settings.openAtLogin;
    },
  };
  return { app, calls };
}

describe('createLoginItem', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llmtray-autostart-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('uses the OS setting on macOS and Windows', () => {
    for (const platform of ['darwin', 'win32'] as const) {
      const { app, calls } = fakeApp();
      const item = createLoginItem({ platform, app, autostartDir: join(dir, 'unused'), command: { command: 'C:\\llmtray.exe', args: [] } });
      expect(item.get()).toBe(false);
      item.set(true);
      expect(item.get()).toBe(true);
      expect(calls).toEqual([{ openAtLogin: true, args: [] }]);
    }
  });

  it('writes and removes an XDG autostart entry on Linux', () => {
    const autostartDir = join(dir, 'config', 'autostart');
    const { app, calls } = fakeApp();
    const item = createLoginItem({ platform: 'linux', app, autostartDir, command: { command: '/home/ada/Apps/llmtray.AppImage', args: [] } });
    expect(item.get()).toBe(false);
    item.set(true);
    item.set(true);
    expect(item.get()).toBe(true);
    expect(readFileSync(join(autostartDir, 'llmtray.desktop'), 'utf8')).toContain('Exec="/home/ada/Apps/llmtray.AppImage"\n');
    item.set(false);
    item.set(false);
    expect(item.get()).toBe(false);
    expect(calls).toEqual([]);
  });

  it('names the file it could not write', () => {
    const blocked = join(dir, 'file-not-dir');
    createLoginItem({ platform: 'linux', app: fakeApp().app, autostartDir: blocked, command: { command: 'x', args: [] } }).set(true);
    const item = createLoginItem({ platform: 'linux', app: fakeApp().app, autostartDir: join(blocked, 'llmtray.desktop'), command: { command: 'x', args: [] } });
    expect(() => item.set(true)).toThrow(`could not write ${join(blocked, 'llmtray.desktop', 'llmtray.desktop')}`);
  });
});

describe('linuxAutostartEntry', () => {
  it('quotes each argument the way the Desktop Entry spec asks', () => {
    const entry = linuxAutostartEntry({ command: '/opt/my apps/electron', args: ['/src/llm "tray"', '100%', 'a$b\\c'] });
    expect(entry).toContain('Exec="/opt/my apps/electron" "/src/llm \\\\"tray\\\\"" "100%%" "a\\\\$b\\\\\\\\c"\n');
    expect(entry.startsWith('[Desktop Entry]\nType=Application\nName=llmtray\n')).toBe(true);
  });
});

describe('relaunchCommand', () => {
  // The daemon runs in the main process, whose V8 takes its flags only from the command line.
  const jsFlags = `--js-flags=${DAEMON_NODE_FLAGS.join(' ')}`;
  it('prefers the AppImage, then the packaged binary, then electron with the app folder, each with the daemon\'s V8 flags', () => {
    expect(relaunchCommand({ execPath: '/tmp/.mount_x/llmtray', isPackaged: true, appPath: '/tmp/.mount_x/resources/app.asar', appImage: '/home/ada/llmtray.AppImage' })).toEqual({
      command: '/home/ada/llmtray.AppImage',
      args: [jsFlags],
    });
    expect(relaunchCommand({ execPath: '/opt/llmtray/llmtray', isPackaged: true, appPath: '/opt/llmtray/resources/app.asar', appImage: undefined })).toEqual({
      command: '/opt/llmtray/llmtray',
      args: [jsFlags],
    });
    expect(relaunchCommand({ execPath: '/src/node_modules/electron/dist/electron', isPackaged: false, appPath: '/src', appImage: undefined })).toEqual({
      command: '/src/node_modules/electron/dist/electron',
      args: [jsFlags, '/src'],
    });
  });
});
