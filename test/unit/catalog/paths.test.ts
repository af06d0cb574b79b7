import { describe, expect, test } from 'vitest';
import { configDir, configFilePath, dataDir, defaultModelDirs, resolveUserPath, type PlatformFacts } from '../../../core/catalog/paths.js';

const linux = (env: Record<string, string> = {}): PlatformFacts => ({ platform: 'linux', env, homeDir: '/home/ada' });
const mac: PlatformFacts = { platform: 'darwin', env: {}, homeDir: '/Users/ada' };
const windows: PlatformFacts = { platform: 'win32', env: { APPDATA: 'C:\\Users\\ada\\AppData\\Roaming', LOCALAPPDATA: 'C:\\Users\\ada\\AppData\\Local' }, homeDir: 'C:\\Users\\ada' };

describe('platform paths', () => {
  test.each([
    ['linux', linux(), '/home/ada/.config/llmtray/config.yaml'],
    ['linux with XDG_CONFIG_HOME', linux({ XDG_CONFIG_HOME: '/cfg' }), '/cfg/llmtray/config.yaml'],
    ['linux with a relative XDG_CONFIG_HOME (invalid per spec)', linux({ XDG_CONFIG_HOME: 'cfg' }), '/home/ada/.config/llmtray/config.yaml'],
    ['macOS', mac, '/Users/ada/Library/Application Support/llmtray/config.yaml'],
    ['Windows', windows, 'C:\\Users\\ada\\AppData\\Roaming\\llmtray\\config.yaml'],
  ])('config file on %s', (_name, facts, expected) => expect(configFilePath(facts)).toBe(expected));

  test('an override dir (Electron userData) and --config win over the convention', () => {
    expect(configDir(linux(), '/electron/userData')).toBe('/electron/userData');
    expect(configFilePath(linux(), { overrideDir: '/electron/userData' })).toBe('/electron/userData/config.yaml');
    expect(configFilePath(linux(), { configFile: 'my.yaml', cwd: '/work' })).toBe('/work/my.yaml');
  });

  test('data lives in XDG_DATA_HOME on Linux and beside the config elsewhere', () => {
    expect(dataDir(linux())).toBe('/home/ada/.local/share/llmtray');
    expect(dataDir(linux({ XDG_DATA_HOME: '/data' }))).toBe('/data/llmtray');
    expect(dataDir(mac)).toBe('/Users/ada/Library/Application Support/llmtray');
  });

  test('default model dirs: own folder, LM Studio (both layouts), the HF hub cache, llama.cpp cache, honouring their env variables', () => {
    expect(defaultModelDirs(linux())).toEqual([
      '/home/ada/models', '/home/ada/.lmstudio/models', '/home/ada/.cache/lm-studio/models',
      '/home/ada/.cache/huggingface/hub', '/home/ada/.cache/llama.cpp',
    ]);
    const custom = defaultModelDirs(linux({ HF_HOME: '/hf', LLAMA_CACHE: '/lc' }));
    expect(custom.slice(3)).toEqual(['/hf/hub', '/lc']);
    expect(defaultModelDirs(mac)[4]).toBe('/Users/ada/Library/Caches/llama.cpp');
    // As huggingface_hub finds its cache: HF_HUB_CACHE, HF_HOME/hub, then XDG_CACHE_HOME's.
    expect(defaultModelDirs(linux({ XDG_CACHE_HOME: '/xc' }))[3]).toBe('/xc/huggingface/hub');
    expect(defaultModelDirs(linux({ XDG_CACHE_HOME: '/xc', HF_HOME: '/hf', HF_HUB_CACHE: '/hub' }))[3]).toBe('/hub');
  });

  test('~ is the home folder; relative paths are taken from the config file folder', () => {
    expect(resolveUserPath('~/models/a.gguf', '/cfg', '/home/ada')).toBe('/home/ada/models/a.gguf');
    expect(resolveUserPath('models/a.gguf', '/cfg', '/home/ada')).toBe('/cfg/models/a.gguf');
    expect(resolveUserPath('/abs/a.gguf', '/cfg', '/home/ada')).toBe('/abs/a.gguf');
  });
});
