import { describe, expect, it } from 'vitest';
import { findLlamaServer } from '../../../core/engine/llama-server/find-binary.js';

/** A file system where exactly `executables` are executable files; records what was checked. */
function fakeFs(executables: string[]) {
  const checked: string[] = [];
  return {
    checked,
    isExecutable: async (path: string) => {
      checked.push(path);
      return executables.includes(path);
    },
  };
}

describe('findLlamaServer', () => {
  it('takes the configured path when it is an executable', async () => {
    const fs = fakeFs(['/srv/llama/llama-server', '/usr/bin/llama-server']);
    const found = await findLlamaServer({ configured: '/srv/llama/llama-server', envPath: '/usr/bin', platform: 'linux', isExecutable: fs.isExecutable });
    expect(found).toEqual({ found: true, path: '/srv/llama/llama-server', source: 'configured' });
  });

  it('does not fall back to another build when the configured one is wrong', async () => {
    const fs = fakeFs(['/usr/bin/llama-server']);
    const found = await findLlamaServer({ configured: '/srv/gone/llama-server', envPath: '/usr/bin', platform: 'linux', isExecutable: fs.isExecutable });
    expect(found.found).toBe(false);
    if (!found.found) expect(found.reason).toMatch(/configured llama-server \/srv\/gone\/llama-server is not an executable/);
  });

  it('searches PATH in order', async () => {
    const fs = fakeFs(['/b/llama-server', '/c/llama-server']);
    const found = await findLlamaServer({ envPath: '/a:/b:/c', platform: 'linux', homeDir: '/home/u', isExecutable: fs.isExecutable });
    expect(found).toEqual({ found: true, path: '/b/llama-server', source: 'PATH' });
    expect(fs.checked).toEqual(['/a/llama-server', '/b/llama-server']);
  });

  it("finds Homebrew's build where a desktop session's PATH lacks it", async () => {
    const fs = fakeFs(['/opt/homebrew/bin/llama-server']);
    const found = await findLlamaServer({ envPath: '/usr/bin:/bin', platform: 'darwin', homeDir: '/Users/u', isExecutable: fs.isExecutable });
    expect(found).toEqual({ found: true, path: '/opt/homebrew/bin/llama-server', source: 'install-location' });
  });

  it('finds ~/.local/bin', async () => {
    const fs = fakeFs(['/home/u/.local/bin/llama-server']);
    const found = await findLlamaServer({ envPath: '', platform: 'linux', homeDir: '/home/u', isExecutable: fs.isExecutable });
    expect(found).toMatchObject({ found: true, path: '/home/u/.local/bin/llama-server' });
  });

  it('uses llama-server.exe and ; on Windows', async () => {
    const fs = fakeFs(['C:\\llama\\llama-server.exe']);
    const found = await findLlamaServer({ envPath: 'C:\\Windows;C:\\llama', platform: 'win32', homeDir: 'C:\\Users\\u', isExecutable: fs.isExecutable });
    expect(found).toEqual({ found: true, path: 'C:\\llama\\llama-server.exe', source: 'PATH' });
  });

  it('says how many places it looked when there is none, checking each only once', async () => {
    const fs = fakeFs([]);
    const found = await findLlamaServer({ envPath: '/usr/local/bin:/usr/bin', platform: 'linux', homeDir: '/home/u', isExecutable: fs.isExecutable });
    expect(found.found).toBe(false);
    if (!found.found) {
      expect(found.searched).toEqual([...new Set(found.searched)]);
      expect(found.reason).toContain(`${found.searched.length} paths checked`);
    }
    expect(fs.checked.filter((p) => p === '/usr/local/bin/llama-server')).toHaveLength(1);
  });
});
