import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN_FILE, ensureAdminToken, readAdminToken } from '../../../core/admin/admin-token.js';

let dataDir: string;
beforeEach(async () => {
  dataDir = await fsp.mkdtemp(join(tmpdir(), 'llmtray-token-'));
});
afterEach(async () => {
  await fsp.rm(dataDir, { recursive: true, force: true });
});

const tokenPath = (): string => join(dataDir, ADMIN_TOKEN_FILE);
const modeOf = async (path: string): Promise<number> => (await fsp.stat(path)).mode & 0o777;

describe('admin token', () => {
  it('creates 32 random bytes as hex and reuses them on the next start', async () => {
    const token = await ensureAdminToken(dataDir);
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(await ensureAdminToken(dataDir)).toBe(token);
    expect(await readAdminToken(dataDir)).toBe(token);
    expect((await fsp.readFile(tokenPath(), 'utf8')).trim()).toBe(token);
    const other = await fsp.mkdtemp(join(tmpdir(), 'llmtray-token-'));
    try {
      expect(await ensureAdminToken(other)).not.toBe(token);
    } finally {
      await fsp.rm(other, { recursive: true, force: true });
    }
  });

  // POSIX permission bits; llmtray's test machines are Linux.
  it('is created with mode 0600 whatever the umask, and a looser existing mode is tightened', async () => {
    const previous = process.umask(0o000);
    try {
      await ensureAdminToken(dataDir);
    } finally {
      process.umask(previous);
    }
    expect(await modeOf(tokenPath())).toBe(0o600);
    await fsp.chmod(tokenPath(), 0o644);
    await ensureAdminToken(dataDir);
    expect(await modeOf(tokenPath())).toBe(0o600);
  });

  it('gives two daemons starting at once the same token', async () => {
    const tokens = await Promise.all([ensureAdminToken(dataDir), ensureAdminToken(dataDir), ensureAdminToken(dataDir)]);
    expect(new Set(tokens).size).toBe(1);
    expect(await readAdminToken(dataDir)).toBe(tokens[0]);
    expect(await fsp.readdir(dataDir)).toEqual([ADMIN_TOKEN_FILE]);
  });

  it('replaces a file that does not hold a token', async () => {
    await fsp.writeFile(tokenPath(), 'hello\n');
    await expect(readAdminToken(dataDir)).rejects.toThrow(`${tokenPath()} does not hold an admin token (expected 64 hex characters)`);
    const token = await ensureAdminToken(dataDir);
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(await readAdminToken(dataDir)).toBe(token);
  });

  it('tells the CLI clearly when the daemon never ran with that data directory, creating nothing', async () => {
    await expect(readAdminToken(dataDir)).rejects.toThrow(
      `No admin token at ${tokenPath()}: the llmtray daemon has never run with the data directory ${dataDir}.`,
    );
    expect(await fsp.readdir(dataDir)).toEqual([]);
  });
});
