// The demo's config file (DATA_DIR/demo/config.yaml) as a person meets it: `serve --demo` with a
// typo in it, or a YAML syntax error, refuses to start and says where (before, it logged a
// warning, served 0 models, and every request for demo-chat answered "no models are
// configured"); an edit while it runs applies, as any config's does (before, the demo did not
// watch its config and nothing said so); and the budget limit the demo writes there is a size a
// person reads, the same at the next start (before, raw bytes that changed between starts).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseSize } from '../../core/catalog/config/units.js';
import { prepareDemo } from '../../core/daemon/demo.js';
import { CLI_ENTRY, eventually, makeDataDir, removeDataDir, startDaemonProcess, STRICT_REJECTIONS, type DaemonProcess } from '../support/daemon-process.js';

interface ServeOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `llmtray serve --demo` on `dataDir`, to its exit: for a start that must refuse. */
function serveDemoToExit(dataDir: string): Promise<ServeOutcome> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [STRICT_REJECTIONS, CLI_ENTRY, 'serve', '--demo', '--data-dir', dataDir, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.once('close', (code) => done({ code, stdout, stderr }));
  });
}

/**
 * Rewrites the line of demo-chat's entry (the first model) that starts with `linePrefix` as
 * `to`; returns the file's new text. By line, not by text: the demo's own writes reformat the
 * file (`aliases: [ chat ]`).
 */
async function editDemoChat(configPath: string, linePrefix: string, to: string): Promise<string> {
  const lines = (await readFile(configPath, 'utf8')).split('\n');
  const entry = lines.indexOf('  - id: demo-chat');
  const at = lines.findIndex((line, i) => i > entry && line.startsWith(linePrefix));
  expect(at, `the demo config has a line ${JSON.stringify(linePrefix)}… in demo-chat's entry`).toBeGreaterThan(entry);
  lines[at] = to;
  const edited = lines.join('\n');
  await writeFile(configPath, edited);
  return edited;
}

describe('serve --demo with a broken demo config', () => {
  let dataDir: string;
  afterEach(async () => {
    if (dataDir) await removeDataDir(dataDir);
  });

  it('a misspelt field: exits 1 naming the file, the field, its value and the field it was meant to be; serves nothing', async () => {
    dataDir = await makeDataDir();
    const { configPath } = await prepareDemo(dataDir);
    await editDemoChat(configPath, '    ctx:', '    cxt: 4096');

    const outcome = await serveDemoToExit(dataDir);
    expect(outcome.code, outcome.stderr).toBe(1);
    expect(outcome.stderr).toContain(`llmtray: the config file ${configPath} has an error, so llmtray does not start:`);
    expect(outcome.stderr).toContain(`${configPath}: models[0].cxt: unknown field, set to 4096; did you mean "ctx"? Expected one of: id, path, ctx,`);
    expect(outcome.stderr).toContain('Fix the file, or delete it and the demo writes a fresh one, then start llmtray again.');
    // Nothing served: no endpoint printed, no daemon.json for the CLI to find, no "serving 0 model(s)".
    expect(outcome.stdout).toBe('');
    expect(outcome.stderr).not.toContain('serving');
    expect(existsSync(join(dataDir, 'daemon.json'))).toBe(false);
  }, 120_000);

  it('a YAML syntax error: exits 1 naming the file, the line and the column', async () => {
    dataDir = await makeDataDir();
    const { configPath } = await prepareDemo(dataDir);
    const edited = await editDemoChat(configPath, '    ctx:', '    ctx: "4096');
    const line = edited.split('\n').findIndex((l) => l === '    ctx: "4096') + 1;

    const outcome = await serveDemoToExit(dataDir);
    expect(outcome.code, outcome.stderr).toBe(1);
    expect(outcome.stderr).toContain(`llmtray: the config file ${configPath} has`);
    // The quote opened on that line is the error's start, wherever the parser gives up.
    expect(outcome.stderr).toMatch(new RegExp(`${configPath.replace(/[.]/g, '\\.')}:${line}:\\d+: YAML syntax error: `));
    expect(outcome.stdout).toBe('');
    expect(existsSync(join(dataDir, 'daemon.json'))).toBe(false);
  }, 120_000);
});

describe('the demo config while the demo runs, and its budget limit across starts', () => {
  let dataDir: string;
  let daemon: DaemonProcess | undefined;
  let configPath: string;
  let limitAtFirstStart: string;

  beforeAll(async () => {
    dataDir = await makeDataDir();
    configPath = join(dataDir, 'demo', 'config.yaml');
    // The first start writes the config and its limit.
    const first = await startDaemonProcess({ dataDir });
    limitAtFirstStart = String(parse(await readFile(configPath, 'utf8')).budget.limit);
    await first.stop();
    daemon = await startDaemonProcess({ dataDir });
  }, 180_000);

  afterAll(async () => {
    await daemon?.stop();
    if (dataDir) await removeDataDir(dataDir);
  });

  it('the limit is a size a person reads, the same at the next start, and the one in force', async () => {
    // In 10 MiB steps where the range allows, whole MiB where it is narrower (a llama-server's smaller footprints).
    expect(limitAtFirstStart).toMatch(/^\d+MiB$/);
    const text = await readFile(configPath, 'utf8');
    expect(parse(text).budget.limit).toBe(limitAtFirstStart);
    expect(text).toContain(`  limit: ${limitAtFirstStart}\n`);
    expect((await daemon!.state()).budget.limitBytes).toBe(parseSize(limitAtFirstStart));
  });

  it('an edit applies while it runs; a bad one is reported, and the last good config keeps serving', async () => {
    const running = daemon!;
    await editDemoChat(configPath, '    aliases:', '    aliases: [chat, talk]');
    await eventually('demo-chat answers to the alias the edit added', async () =>
      (await running.model('demo-chat')).aliases.includes('talk') ? true : undefined,
    );

    await editDemoChat(configPath, '    ctx:', '    cxt: 4096');
    const error = `${configPath}: models[0].cxt: unknown field, set to 4096; did you mean "ctx"?`;
    await eventually('the daemon logs the bad edit as not applied', async () =>
      running.stderr().includes(`config not applied, the last good one stays: ${error}`) ? true : undefined,
    );
    const state = await running.state();
    expect(state.configErrors.some((line) => line.startsWith(error))).toBe(true);
    expect(state.configInForce).toBe('file');
    // The last good config: demo-chat still listed, with the alias the good edit gave it.
    expect(state.models.find((m) => m.id === 'demo-chat')?.aliases).toEqual(['chat', 'talk']);
  }, 120_000);
});
