// Every example a newcomer copies, run as it is printed against a real `llmtray serve --demo`:
// README.md's code blocks and those of every other doc, and the dashboard's Connect tab
// examples. A doc edit that breaks an example fails here, not in the hands of the person who
// pasted it.
//
// What is changed before a block runs, and only that: the documented endpoint's port, 11435,
// becomes this file's daemon's (a free port, so the file runs beside a llmtray a developer has
// running, and beside the other test files). The `npx llmtray` command lines run as printed,
// pointed at the daemon by XDG_DATA_HOME (the CLI's default data dir on Linux is
// $XDG_DATA_HOME/llmtray, where this file's daemon keeps its daemon.json).
//
// Every ```js block runs as a module of its own (a newcomer copies one block, not the page),
// written inside the repo (.llmtray-test/, ignored by git) so that `import OpenAI from 'openai'`
// resolves from the repo's node_modules as it does for someone who runs it in the clone. Every
// ```sh line is either run or named below with why it is not; a new command in a doc that is
// neither fails the file, so that nobody adds one that no test has tried.
//
// On each engine, as a person meets the demo: the embedded engine, and a real llama-server where
// LLMTRAY_LLAMA_SERVER names one (on PATH, so `serve --demo` picks it for every model, as it
// does for a person who has one; `.ci/run` builds one and sets it; unset, that half is reported
// skipped, not passed; set to a file that is not there, it fails). The tool example is the one
// whose engines differ: on llama-server it is answered with the call through the nudge the
// demo's config gives demo-tiny there (engineArgs, core/catalog/demo/spm-vocab.ts).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { delimiter, dirname, join, relative, resolve } from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleFor } from '../../renderer/src/components/connect-examples.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';
import { ENGINES, LLAMA_SERVER, requireEngine } from '../support/engine-cases.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
/** The port every doc prints, core/catalog's default listen.port. */
const DOCUMENTED_PORT = 11435;
/** Folders that hold no doc of this project: dependencies, build output, caches, other repos' trees. */
const NOT_DOCS = new Set(['node_modules', 'dist', '.git', '.llama-server', '.chromium', '.node', '.llmtray-test', 'coverage', 'test-results']);
/** How many times the tool example runs: the grammar must close the call every time, not once by luck. */
const TOOL_EXAMPLE_RUNS = 3;
/** A failure's bound for one example's process, not a claim about its speed: each answers in seconds on 2 idle cores. */
const EXAMPLE_LIMIT_MS = 120_000;

/**
 * The command lines of the docs that this file does not run, each with why. A doc's ```sh line
 * that matches none of these and is not an `npx llmtray` command this file runs fails the test.
 */
const NOT_RUN: readonly { command: RegExp; why: string }[] = [
  { command: /^npm ci\b/, why: 'installs the dependencies this suite runs from' },
  { command: /^npm install\b/, why: "downloads Electron's binary: the network is not there in CI" },
  {
    command: /^npm (start|run serve)\b/,
    why: 'builds dist/ (which the other test files run from, mid-suite) and serves on the documented port; this file starts `serve --demo` itself on a free port',
  },
  { command: /^npm run (build|package)\b|^npx electron-builder\b/, why: 'rewrites dist/ under the other test files; packaging downloads Electron' },
  { command: /^npm run soak\b/, why: 'minutes of swaps with faults; test/integration/soak.test.ts runs the short profile' },
  { command: /^npx llmtray logs (-f|--follow)\b/, why: 'follows the log until Ctrl-C: it never ends by itself' },
  { command: /^npx llmtray pull\b/, why: 'downloads from Hugging Face, and CI has no network: test/integration/daemon-pull.test.ts pulls through a real daemon from a Hub stand-in' },
];
/** The `llmtray` subcommands that leave a running daemon serving, so safe to run against this file's. */
const SAFE_CLI = /^npx llmtray (status|pin|unpin|load|logs|activity)\b/;

interface CodeBlock {
  /** Where it is, as `README.md:42` (the line of its opening fence). */
  where: string;
  lang: string;
  text: string;
}

function docFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (NOT_DOCS.has(name)) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return docFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

function codeBlocks(path: string): CodeBlock[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i] ?? '');
    if (open === null) continue;
    const end = lines.findIndex((line, j) => j > i && /^```\s*$/.test(line));
    if (end < 0) throw new Error(`${relative(ROOT, path)}:${i + 1}: a code block that never closes`);
    blocks.push({ where: `${relative(ROOT, path)}:${i + 1}`, lang: open[1] ?? '', text: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

const DOCS = docFiles(ROOT);
const BLOCKS = DOCS.flatMap(codeBlocks);
const JS_BLOCKS = BLOCKS.filter((block) => ['js', 'javascript', 'mjs'].includes(block.lang));
/** One entry per command: a ```sh block's lines, continuations joined, comments and blank lines left out. */
const COMMANDS = BLOCKS.filter((block) => ['sh', 'bash', 'shell'].includes(block.lang)).flatMap(({ where, text }) =>
  text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((command) => command !== '' && !command.startsWith('#'))
    .map((command) => ({ where, command })),
);

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: readonly string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const limit = setTimeout(() => child.kill('SIGKILL'), EXAMPLE_LIMIT_MS);
    child.once('error', fail);
    child.once('close', (code) => {
      clearTimeout(limit);
      done({ code, stdout, stderr });
    });
  });
}

/** Writes `source` as a module in `dir` (inside the repo) and runs it with this Node. */
function runModule(dir: string, name: string, source: string): Promise<Ran> {
  const file = join(dir, `${name.replace(/[^\w.-]+/g, '-')}.mjs`);
  writeFileSync(file, source);
  return run(process.execPath, [file]);
}

/** The block with the documented port replaced by the daemon's: the one change made before it runs. */
function pointedAt(daemon: DaemonProcess, text: string): string {
  return text.replaceAll(`127.0.0.1:${DOCUMENTED_PORT}`, `127.0.0.1:${daemon.port}`);
}

const failure = (ran: Ran): string => `exit ${ran.code}\nstdout: ${ran.stdout}\nstderr: ${ran.stderr}`;

/** The object literal after `key:` in `text`, by matching braces (the examples' schemas hold no braces in strings). */
function objectLiteralAfter(text: string, key: string): string {
  const start = text.indexOf('{', text.indexOf(`${key}:`));
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    if (text[i] === '{') depth++;
    if (text[i] === '}' && --depth === 0) return text.slice(start, i + 1);
  }
  throw new Error(`no object literal after '${key}:'`);
}

/** The tool's name and JSON schema as the example prints them, read from its own text. */
function toolOf(text: string): { name: string; parameters: object } {
  const name = /function:\s*\{\s*name:\s*'([^']+)'/.exec(text)?.[1];
  if (name === undefined) throw new Error('the tool example names no function');
  // The README's own code, evaluated as the example evaluates it: the schema is a JS literal, not JSON.
  const parameters = new Function(`return (${objectLiteralAfter(text, 'parameters')});`)() as object;
  return { name, parameters };
}

describe('the docs hold examples to run', () => {
  it('README.md has the chat, tool, Anthropic and Responses examples, and the CLI lines', () => {
    const readme = JS_BLOCKS.filter((block) => block.where.startsWith('README.md:')).map((block) => block.text);
    expect(readme.some((text) => text.includes('chat.completions.create') && !text.includes('tools:'))).toBe(true);
    expect(readme.some((text) => text.includes('tools:'))).toBe(true);
    expect(readme.some((text) => text.includes('messages.create'))).toBe(true);
    expect(readme.some((text) => text.includes('responses.create'))).toBe(true);
    expect(COMMANDS.filter(({ command }) => SAFE_CLI.test(command)).length).toBeGreaterThan(0);
  });

  it('every ```sh line is run here or named with why it is not', () => {
    const unclassified = COMMANDS.filter(({ command }) => !SAFE_CLI.test(command) && !NOT_RUN.some(({ command: pattern }) => pattern.test(command)));
    expect(unclassified).toEqual([]);
  });

  it('no code block is in a language this file does not run (ts, python): an example in one would go untested', () => {
    expect(BLOCKS.filter((block) => ['ts', 'typescript', 'tsx', 'python', 'py'].includes(block.lang)).map((block) => block.where)).toEqual([]);
  });

  it('every example bounds its answer: a model that never ends a turn would write for a minute', () => {
    const unbounded = JS_BLOCKS.filter(
      (block) =>
        (/\.(chat\.completions|messages)\.create\(/.test(block.text) && !/max_tokens:\s*\d+/.test(block.text)) ||
        (block.text.includes('responses.create(') && !/max_output_tokens:\s*\d+/.test(block.text)) ||
        (/ollama\.(chat|generate)\(/.test(block.text) && !/num_predict:\s*\d+/.test(block.text)),
    );
    expect(unbounded.map((block) => block.where)).toEqual([]);
  });
});

describe.each(ENGINES)('serve --demo on the $engine engine', ({ engine, skip }) => {
  let daemon: DaemonProcess;
  /** XDG_DATA_HOME for the CLI: the daemon's data dir is its llmtray/ folder. */
  let dataHome: string;
  /** Where the blocks are written as modules: inside the repo, so that packages resolve. */
  let moduleDir: string;

  beforeAll(async () => {
    if (skip) return;
    requireEngine(engine);
    dataHome = await makeDataDir();
    // A llama-server on PATH is what `auto`, the demo's engine choice, finds.
    const env: Record<string, string> = engine === 'llama-server' ? { PATH: `${dirname(LLAMA_SERVER ?? '')}${delimiter}${process.env['PATH'] ?? ''}` } : {};
    daemon = await startDaemonProcess({ dataDir: join(dataHome, 'llmtray'), env, startTimeoutMs: 60_000 });
    mkdirSync(join(ROOT, '.llmtray-test'), { recursive: true });
    moduleDir = mkdtempSync(join(ROOT, '.llmtray-test', `readme-examples-${engine}-`));
  });

  afterAll(async () => {
    await daemon?.stop();
    if (dataHome !== undefined) await removeDataDir(dataHome);
    if (moduleDir !== undefined) rmSync(moduleDir, { recursive: true, force: true });
  });

  it.skipIf(skip)(`serves the demo on ${engine}`, async () => {
    expect((await daemon.model('demo-chat')).engine).toBe(engine);
  });

  describe('every ```js block of the docs runs against serve --demo', () => {
    for (const block of JS_BLOCKS) {
      const isToolExample = block.text.includes('tool_calls');
      it.skipIf(skip)(
        `${block.where} exits 0${isToolExample ? `, ${TOOL_EXAMPLE_RUNS} times, with a call valid under its schema` : ''}`,
        async () => {
          expect(block.text).toContain(`127.0.0.1:${DOCUMENTED_PORT}`);
          const runs = isToolExample ? TOOL_EXAMPLE_RUNS : 1;
          for (let i = 0; i < runs; i++) {
            const ran = await runModule(moduleDir, `${block.where}-${i}`, pointedAt(daemon, block.text));
            expect(ran.code, failure(ran)).toBe(0);
            if (!isToolExample) continue;
            // The example prints the call's name and its arguments as the engine wrote them.
            const { name, parameters } = toolOf(block.text);
            const line = ran.stdout.split('\n').find((text) => text.startsWith(`${name} `));
            expect(line, failure(ran)).toBeDefined();
            const args: unknown = JSON.parse(line!.slice(name.length + 1));
            const valid = new Ajv({ strict: false }).compile(parameters);
            expect(valid(args), `${line}: ${JSON.stringify(valid.errors)}`).toBe(true);
          }
        },
        EXAMPLE_LIMIT_MS * TOOL_EXAMPLE_RUNS,
      );
    }
  });

  describe("the dashboard's Connect tab examples run against serve --demo", () => {
    const target = () => ({ endpoint: daemon.endpoint, model: 'demo-chat', keysRequired: false });

    it.skipIf(skip)('the JavaScript example exits 0', async () => {
      const ran = await runModule(moduleDir, 'connect-javascript', exampleFor('javascript', target()));
      expect(ran.code, failure(ran)).toBe(0);
    }, EXAMPLE_LIMIT_MS);

    it.skipIf(skip)('the curl example gets a chat completion cut at its max_tokens', async () => {
      const ran = await run('sh', ['-c', exampleFor('curl', target())]);
      expect(ran.code, failure(ran)).toBe(0);
      // curl exits 0 on a 4xx too: the answer itself says whether it worked.
      const answer = JSON.parse(ran.stdout) as { choices: { finish_reason: string }[]; usage: { completion_tokens: number } };
      expect(answer.choices[0]?.finish_reason, ran.stdout).toBe('length');
      expect(answer.usage.completion_tokens).toBe(64);
    }, EXAMPLE_LIMIT_MS);

    // The Python example is not run: the openai Python package is no dependency of this repo, and
    // a Python with it may not be on the machine. It is the JavaScript one's request, line for line.
  });

  describe('the `npx llmtray` lines of the docs run against the daemon', () => {
    for (const { where, command } of COMMANDS.filter(({ command }) => SAFE_CLI.test(command) && !NOT_RUN.some((rule) => rule.command.test(command)))) {
      it.skipIf(skip)(`${where}: \`${command}\` exits 0`, async () => {
        const ran = await run('sh', ['-c', command], { XDG_DATA_HOME: dataHome });
        expect(ran.code, failure(ran)).toBe(0);
        // It spoke to this file's daemon, not to one a developer has running on 11435.
        if (command.startsWith('npx llmtray status')) expect(ran.stdout).toContain(daemon.endpoint);
      }, EXAMPLE_LIMIT_MS);
    }
  });
});
