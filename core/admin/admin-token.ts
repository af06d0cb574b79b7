// The per-install admin token: DATA_DIR/admin-token, 32 random bytes as hex, readable by the
// person who runs llmtray and nobody else (mode 0600).
//
// Why a token at all when the listener is loopback-only: every program and every other user
// on the machine can reach 127.0.0.1. The OpenAI endpoint is meant for them; the admin API
// (unload a model, read the engines' per-launch keys in the snapshot) is meant for the person
// only, and file permissions are the one boundary the OS already enforces between users.
// Why it persists: the CLI reads it to talk to a daemon it did not start, and a dashboard tab
// keeps its session across a daemon restart.
import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { isCode, writeFileAtomic } from '../common/atomic-file.js';

export const ADMIN_TOKEN_FILE = 'admin-token';

const TOKEN_BYTES = 32;
const TOKEN_PATTERN = /^[0-9a-f]{64}$/;
/** Permission bits anyone but the owner has; none may be set on the token file. */
const GROUP_AND_OTHER = 0o077;

/**
 * The daemon's side: returns the token in DATA_DIR/admin-token, creating it (and DATA_DIR,
 * mode 0700) on first start. Idempotent across restarts: an existing valid token is reused,
 * and re-chmodded to 0600 if its mode let others read it. A file that does not hold a token
 * (empty, edited) is replaced. Safe when two daemons start at once: both end with the same
 * token. Blocks on the disk; rejects on I/O failure (the daemon cannot serve its admin API).
 */
export async function ensureAdminToken(dataDir: string): Promise<string> {
  await fsp.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, ADMIN_TOKEN_FILE);
  const existing = await readTokenFile(path);
  if (existing.kind === 'valid') {
    await tightenMode(path);
    return existing.token;
  }
  const token = randomBytes(TOKEN_BYTES).toString('hex');
  if (existing.kind === 'invalid') {
    await writeFileAtomic(path, `${token}\n`, { mode: 0o600 });
    return token;
  }
  const outcome = await writeFileAtomic(path, `${token}\n`, { mode: 0o600, ifExists: 'keep' });
  if (outcome === 'written') return token;
  // Another daemon created it between our read and our write: use theirs.
  return readAdminToken(dataDir);
}

/**
 * The CLI's side: the token of the daemon that uses DATA_DIR. Never creates anything. Rejects
 * with a sentence naming the path when the daemon never ran there or the file is damaged.
 * `runningPid`: the daemon the CLI found running there (daemon.json), so a missing file is said
 * to be what it is: deleted under that daemon, which writes a token only when it starts (the
 * way deleting it and restarting revokes every dashboard tab), not a daemon that never ran.
 */
export async function readAdminToken(dataDir: string, runningPid?: number): Promise<string> {
  const path = join(dataDir, ADMIN_TOKEN_FILE);
  const found = await readTokenFile(path);
  if (found.kind === 'valid') return found.token;
  if (found.kind === 'missing' && runningPid !== undefined) {
    throw new Error(
      `The llmtray daemon runs (pid ${runningPid}) but its token file ${path} is gone: it was deleted while the daemon ran, and the daemon writes one only when it starts. Restart it: stop it (Ctrl-C where it runs, quit the tray, or \`kill ${runningPid}\`), then start it again (\`llmtray serve\`); the new token also signs out every open dashboard.`,
    );
  }
  if (found.kind === 'missing') {
    throw new Error(
      `No admin token at ${path}: the llmtray daemon has never run with the data directory ${dataDir}. Start it (\`llmtray serve\`), or point the CLI at the data directory the running daemon uses.`,
    );
  }
  throw new Error(
    `${path} does not hold an admin token (expected ${TOKEN_BYTES * 2} hex characters): restart the llmtray daemon to write a new one.`,
  );
}

type TokenFile = { kind: 'valid'; token: string } | { kind: 'missing' } | { kind: 'invalid' };

async function readTokenFile(path: string): Promise<TokenFile> {
  let text: string;
  try {
    text = await fsp.readFile(path, 'utf8');
  } catch (error) {
    if (isCode(error, 'ENOENT')) return { kind: 'missing' };
    throw error;
  }
  const token = text.trim();
  return TOKEN_PATTERN.test(token) ? { kind: 'valid', token } : { kind: 'invalid' };
}

/** Removes group/other permissions left by an older version or a copy. Windows has no modes: skipped. */
async function tightenMode(path: string): Promise<void> {
  if (process.platform === 'win32') return;
  const { mode } = await fsp.stat(path);
  if ((mode & GROUP_AND_OTHER) !== 0) await fsp.chmod(path, 0o600);
}
