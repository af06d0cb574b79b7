// A configured `engines.llamaServer` that is not there (a typo, a build moved or deleted, a file
// without its executable bit), through the real daemon. Before, the log said "no llama-server
// found" and a request for a model that asks for llama-server got "none was found; set
// engines.llamaServer" — to a person who had set it, without the path that was wrong.
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { generateDemoModels } from '../../core/catalog/demo/demo-models.js';
import { eventually, makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

/**
 * The test's own bound, and its waits': the daemon's log reaches this process on its stderr pipe,
 * apart from its stdout and its HTTP answers, so a line is read when it has come, however late a
 * busy machine delivers it (seen: the count read before the line was there, `expected null`).
 */
const TEST_TIMEOUT_MS = 90_000;
const WAIT_MS = TEST_TIMEOUT_MS - 10_000;

function untilLogged(daemon: DaemonProcess, pattern: RegExp, what: string): Promise<string> {
  return eventually(`the daemon logged ${what}`, async () => (pattern.test(daemon.stderr()) ? daemon.stderr() : undefined), WAIT_MS);
}

let workDir: string | undefined;
let daemon: DaemonProcess | undefined;

afterEach(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await rm(workDir, { recursive: true, force: true });
  daemon = workDir = undefined;
});

describe('a configured llama-server that cannot be run', () => {
  it.each([
    ['does not exist', async (dir: string) => join(dir, 'no-such-build', 'llama-server')],
    [
      'is not executable',
      async (dir: string) => {
        const path = join(dir, 'llama-server');
        await writeFile(path, '#!/bin/sh\nexit 0\n');
        await chmod(path, 0o644);
        return path;
      },
    ],
  ])('that %s is named with its path, in the log at start and in the 503 for a model that needs it', async (_case, makePath) => {
    workDir = await mkdtemp(join(tmpdir(), 'llmtray-no-llama-server-'));
    const models = await generateDemoModels(workDir);
    const llamaServer = await makePath(workDir);
    const configPath = join(workDir, 'config.yaml');
    await writeFile(
      configPath,
      `modelDirs: []\nengines:\n  llamaServer: ${JSON.stringify(llamaServer)}\n  warmSpare: false\nmodels:\n  - { id: needs-llama-server, path: ${JSON.stringify(models.tiny.path)}, ctx: 512, engine: llama-server }\n`,
    );
    daemon = await startDaemonProcess({ dataDir: await makeDataDir(), config: configPath });
    await daemon.untilStdout('http://', WAIT_MS);
    expect(await untilLogged(daemon, /configured llama-server .* is not an executable file/, 'the configured llama-server\'s fault')).toContain(llamaServer);

    const client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
    const error = await client.chat.completions.create({ model: 'needs-llama-server', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }).then(
      () => null,
      (caught: unknown) => caught,
    );
    if (!(error instanceof APIError)) throw new Error(`expected an API error, got ${String(error)}`);
    expect(error.status).toBe(503);
    expect(error.message).toContain(llamaServer);
    expect(error.message).toContain('engines.llamaServer');
    expect(error.message).not.toContain('none was found');
    // Said after one launch, not after four backoffs: no relaunch finds what the start did not.
    expect(error.message).toContain('restart it');
    // Counted once the launches have ended in their verdict: quarantined after one launch, or,
    // were the backoffs back, after several, each logged before that line.
    const log = await untilLogged(daemon, /needs-llama-server is quarantined/, 'the model quarantined');
    expect(log.match(/launching needs-llama-server/g)).toHaveLength(1);
  }, TEST_TIMEOUT_MS);
});
