// `llmtray pull` through a real daemon, against the Hub stand-in (test/support/hub-standin/) that
// HF_ENDPOINT points it at: a person with no model pulls one and an app chats with it right
// after, under the name it was pulled as. The faults are caused for real: the stand-in cuts the
// connection mid-file, serves bytes that do not match, gates a repo; the daemon is SIGKILLed
// mid-pull and started again; the cache is a tmpfs too small for the model.
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, readlink, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PullView } from '../../core/contracts/hub/pulls.js';
import { CLI_ENTRY, STRICT_REJECTIONS, makeDataDir, removeDataDir, runCli, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';
import { GATED_REPO, SIZES_REPO, SPLIT_REPO, TINY_REPO, VISION_REPO } from '../support/hub-standin/demo-repos.js';
import type { HubStandIn } from '../support/hub-standin/hub-standin.js';
import { makePullWorld, untilOnDisk, type PullWorld } from '../support/pull-world.js';

let world: PullWorld;
let hub: HubStandIn;
let workDir: string;
let hfHome: string;
let daemon: DaemonProcess;
let dataDir: string;

const cli = (...args: string[]) => runCli([...args, '--data-dir', dataDir], 120_000);
const repoDir = (repo: string) => world.repoDir(repo);
const cdnGets = (sha: string) => hub.requests.filter((r) => r.method === 'GET' && r.path === `/cdn/${sha}`);
const startDaemon = () => world.startDaemon();

beforeAll(async () => {
  // A person with no model yet: the only folder searched is the Hugging Face cache, which is empty.
  world = await makePullWorld('llmtray-pull-daemon-');
  ({ hub, workDir, hfHome, dataDir } = world);
  daemon = await startDaemon();
}, 90_000);

afterAll(async () => {
  await daemon?.stop();
  await world?.close();
});

describe('llmtray pull through the daemon', () => {
  it('downloads with visible progress, resumes a cut with a Range request, lands the blob under its sha256 in HF_HOME, and the model answers a chat at once', async () => {
    const sha = hub.sha256Of(TINY_REPO, 'Tiny-Q4_K_M.gguf');
    // The connection drops after 100,000 bytes, once the daemon has written them.
    const held = hub.holdNextDownloadAfter(100_000);
    const pulling = cli('pull', 'hf.co/llmtray-test/Tiny-GGUF:Q4_K_M');
    await held.reached;
    await untilOnDisk(join(repoDir(TINY_REPO), 'blobs', `${sha}.incomplete`), 100_000);
    held.cut();
    const pulled = await pulling;
    expect(pulled.stderr).toBe('');
    expect(pulled.code).toBe(0);
    // Piped: plain lines, the first naming the file and its size, the last saying how it is served.
    expect(pulled.stdout).toMatch(/^pulling hf\.co\/llmtray-test\/Tiny-GGUF:Q4_K_M: Tiny-Q4_K_M\.gguf \(\d+(\.\d)? KiB\)\n/);
    expect(pulled.stdout.trim().split('\n').at(-1)).toBe('pulled; served as hf.co/llmtray-test/Tiny-GGUF:Q4_K_M');
    expect(cdnGets(sha).map((r) => r.range)).toEqual([undefined, 'bytes=100000-']);
    const blob = await readFile(join(repoDir(TINY_REPO), 'blobs', sha));
    expect(createHash('sha256').update(blob).digest('hex')).toBe(sha);
    expect(await readlink(join(repoDir(TINY_REPO), 'snapshots', hub.commitOf(TINY_REPO), 'Tiny-Q4_K_M.gguf'))).toBe(`../../blobs/${sha}`);

    const client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'any-key-works', maxRetries: 0 });
    const reply = await client.chat.completions.create({ model: 'hf.co/llmtray-test/Tiny-GGUF:Q4_K_M', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8 });
    expect(reply.choices[0]?.message.content?.length).toBeGreaterThan(0);
    // The same model by its repo's default name, as Ollama names it.
    const again = await client.chat.completions.create({ model: 'hf.co/llmtray-test/Tiny-GGUF', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4 });
    expect(again.choices).toHaveLength(1);

    // `llmtray pull` alone lists it, done.
    const list = await cli('pull', '--json');
    expect((JSON.parse(list.stdout) as PullView[]).find((p) => p.id === 'hf.co/llmtray-test/Tiny-GGUF:Q4_K_M')).toMatchObject({ state: 'done', receivedBytes: blob.length, totalBytes: blob.length });
  });

  it('refuses an unknown quant, a gated repo and bytes that do not match, each in words that say what to do', async () => {
    const two = await cli('pull', `hf.co/${TINY_REPO}:Q4_K_M`, `hf.co/${TINY_REPO}:Q8_0`);
    expect(two.code).toBe(2);
    expect(two.stderr).toContain('llmtray: pull takes one name, got 2: run one llmtray pull per model');

    const unknown = await cli('pull', `hf.co/${TINY_REPO}:Q3_K_S`);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(`llmtray: ${TINY_REPO} has no Q3_K_S quant; the quants there are Q4_K_M, Q8_0; pull one as hf.co/${TINY_REPO}:Q4_K_M.\n`);

    const gated = await cli('pull', `hf.co/${GATED_REPO}:Q4_K_M`);
    expect(gated.code).toBe(1);
    expect(gated.stderr).toContain(`${GATED_REPO} is gated: accept its terms at ${hub.url}/${GATED_REPO}, then set HF_TOKEN to a token of that account`);

    hub.serveWrongBytes(TINY_REPO, 'Tiny-Q8_0.gguf');
    const mismatch = await cli('pull', `${TINY_REPO}:q8_0`);
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toMatch(/^hf\.co\/llmtray-test\/Tiny-GGUF:Q8_0: failed: Tiny-Q8_0\.gguf arrived with sha256 [0-9a-f]{64}, but the Hub says [0-9a-f]{64}: the bytes are not the file's, so they were deleted\. Pull again/);
    const q8 = hub.sha256Of(TINY_REPO, 'Tiny-Q8_0.gguf');
    await expect(stat(join(repoDir(TINY_REPO), 'blobs', q8))).rejects.toThrow();
    await expect(stat(join(repoDir(TINY_REPO), 'blobs', `${q8}.incomplete`))).rejects.toThrow();
    // Nothing of it is offered as a model.
    expect((await daemon.state()).models.flatMap((m) => m.aliases)).not.toContain(`hf.co/${TINY_REPO}:Q8_0`);
  });

  it('--json prints each change of the pull as one JSON line; Ctrl-C cancels it and a pull again resumes', async () => {
    const held = hub.holdNextDownloadAfter(50_000);
    const child = spawn(process.execPath, [STRICT_REJECTIONS, CLI_ENTRY, 'pull', `hf.co/${SPLIT_REPO}:Q4_K_M`, '--json', '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    await held.reached;
    const sha = hub.sha256Of(SPLIT_REPO, 'Split-Q4_K_M-00001-of-00002.gguf');
    await untilOnDisk(join(repoDir(SPLIT_REPO), 'blobs', `${sha}.incomplete`), 50_000);
    // The CLI has printed the pull's first state by now or will: wait for it before the interrupt, so the interrupt is the pull's cancel.
    while (!stdout.includes('"state":"downloading"')) await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGINT');
    // Released only once the cancel is done: bytes let through before it would finish the file.
    expect(await exited).toBe(130);
    held.release();
    const views = stdout.trim().split('\n').map((line) => JSON.parse(line) as PullView);
    expect(views[0]).toMatchObject({ id: `hf.co/${SPLIT_REPO}:Q4_K_M`, state: 'downloading' });
    expect(views.at(-1)).toMatchObject({ state: 'cancelled' });

    const resumed = await cli('pull', `hf.co/${SPLIT_REPO}:Q4_K_M`);
    expect(resumed.code).toBe(0);
    expect(cdnGets(sha).at(-1)?.range).toMatch(/^bytes=\d+-$/);
    expect(Number(/\d+/.exec(cdnGets(sha).at(-1)?.range ?? '')?.[0])).toBeGreaterThanOrEqual(50_000);
    expect((await daemon.state()).models.find((m) => m.aliases.includes(`hf.co/${SPLIT_REPO}:Q4_K_M`))).toBeDefined();
  });

  it('on a terminal draws one progress bar redrawn in place, then the line that says it is served', async () => {
    // util-linux `script` gives the CLI a pseudo-terminal, as a person's shell does; its output is what the terminal received.
    const held = hub.holdNextDownloadAfter(120_000);
    const command = [process.execPath, STRICT_REJECTIONS, CLI_ENTRY, 'pull', `hf.co/${SIZES_REPO}:F16`, '--data-dir', dataDir].map((arg) => `'${arg}'`).join(' ');
    const child = spawn('script', ['-qec', command, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let seen = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (seen += text));
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    await held.reached;
    while (!seen.includes('\r')) await new Promise((r) => setTimeout(r, 20));
    held.release();
    expect(await exited).toBe(0);
    // The bar: a carriage return, the id, the bar itself and the bytes, the rest of the line cleared.
    expect(seen).toMatch(/\rhf\.co\/llmtray-test\/Sizes-GGUF:F16  \[[#·]{20}\]  \d+ %  [\d.]+ (B|KiB) of [\d.]+ KiB.*\u001b\[K/);
    expect(seen.trimEnd().split(/\r?\n/).at(-1)).toBe('pulled; served as hf.co/llmtray-test/Sizes-GGUF:F16');
  });

  it('a daemon killed mid-pull continues it when started again, from the bytes it had; --delete removes what it pulled', async () => {
    const sha = hub.sha256Of(VISION_REPO, 'Vision-Q4_K_M.gguf');
    const held = hub.holdNextDownloadAfter(80_000);
    const started = await daemon.api(`/api/downloads/${encodeURIComponent(`hf.co/${VISION_REPO}`)}`, { method: 'POST' });
    expect(started.status).toBe(200);
    await held.reached;
    await untilOnDisk(join(repoDir(VISION_REPO), 'blobs', `${sha}.incomplete`), 80_000);
    await daemon.stop('SIGKILL');
    held.release();
    daemon = await startDaemon();
    // The new daemon continues on its own; `llmtray pull NAME` joins the pull it runs.
    const joined = await cli('pull', `hf.co/${VISION_REPO}`);
    expect(joined.code).toBe(0);
    expect(cdnGets(sha).map((r) => r.range)).toEqual([undefined, 'bytes=80000-']);
    const model = (await daemon.state()).models.find((m) => m.aliases.includes(`hf.co/${VISION_REPO}:Q4_K_M`));
    expect(model).toBeDefined();

    const removed = await cli('pull', '--delete', `hf.co/${VISION_REPO}:Q4_K_M`);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain(`removed 4 files:\n  ${join(repoDir(VISION_REPO), 'snapshots', hub.commitOf(VISION_REPO), 'Vision-Q4_K_M.gguf')}`);
    await expect(stat(join(repoDir(VISION_REPO), 'blobs', sha))).rejects.toThrow();
    const refused = await cli('pull', '--delete', 'hf.co/someone/Else-GGUF:Q4_K_M');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('llmtray pulled no model hf.co/someone/Else-GGUF:Q4_K_M, and removes only what it pulled');
  });
});

describe('llmtray pull onto a full disk', () => {
  let tinyDisk: string;
  let own: DaemonProcess | undefined;
  let ownData: string;

  beforeAll(async () => {
    tinyDisk = join(workDir, 'tiny-disk');
    await mkdir(tinyDisk);
    // Smaller than the model: the pull is refused before a byte is written.
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=128k', 'tmpfs', tinyDisk]);
    const config = join(workDir, 'tiny-config.yaml');
    await writeFile(config, `modelDirs: [${JSON.stringify(join(tinyDisk, 'hub'))}]\nengines:\n  warmSpare: false\n`);
    ownData = await makeDataDir();
    own = await startDaemonProcess({ dataDir: ownData, config, env: { HF_ENDPOINT: hub.url, HF_HOME: tinyDisk } });
  }, 90_000);

  afterAll(async () => {
    await own?.stop();
    if (ownData) await removeDataDir(ownData);
    if (tinyDisk) execFileSync('umount', [tinyDisk]);
  });

  it('is refused with both numbers and what to do, before a byte is written', async () => {
    const full = await runCli(['pull', `hf.co/${TINY_REPO}:Q4_K_M`, '--data-dir', ownData], 120_000);
    expect(full.code).toBe(1);
    expect(full.stderr).toMatch(/needs \d+(\.\d)? KiB more on the disk of .*, which has \d+(\.\d)? KiB free; free \d+(\.\d)? KiB there, or set HF_HUB_CACHE to a folder on a disk with room/);
  });
});
