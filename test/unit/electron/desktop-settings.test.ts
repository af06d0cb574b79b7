import { describe, expect, it } from 'vitest';
import { desktopSettings } from '../../../electron/desktop-settings.js';

describe('desktopSettings', () => {
  it('keeps Electron\'s userData inside the data dir, never in the config folder', () => {
    expect(desktopSettings({}, '/home/p/.local/share/llmtray')).toEqual({
      dataDir: '/home/p/.local/share/llmtray',
      userDataDir: '/home/p/.local/share/llmtray/electron',
    });
  });

  it('takes the data dir and the port from the environment when set', () => {
    expect(desktopSettings({ LLMTRAY_DATA_DIR: '/tmp/t', LLMTRAY_PORT: '0' }, '/default')).toEqual({ dataDir: '/tmp/t', userDataDir: '/tmp/t/electron', port: 0 });
  });

  it('refuses a relative data dir and a port that is not one, saying which variable', () => {
    expect(() => desktopSettings({ LLMTRAY_DATA_DIR: 'rel' }, '/d')).toThrow("LLMTRAY_DATA_DIR must be an absolute path, got 'rel'");
    expect(() => desktopSettings({ LLMTRAY_PORT: '70000' }, '/d')).toThrow("LLMTRAY_PORT must be a port number from 0 to 65535, got '70000'");
  });
});
