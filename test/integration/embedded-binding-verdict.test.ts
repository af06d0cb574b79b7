// The kept verdict of node-llama-cpp's binding test (core/engine/embedded/runtime/binding-verdict.ts,
// cpu-runtime.ts), through real embedded engine processes on the CPU: the first start tests the
// binding and keeps the verdict, the next one loads the binding without the test and serves,
// and a verdict that is not this machine's, not JSON, or that names a file outside
// node-llama-cpp's packages is not taken: the binding is tested again, and the engine serves.
//
// The engines get a cache folder of this file's own (XDG_CACHE_HOME), so the run-wide one
// (test/support/run-cache-dir.ts) neither decides nor records what these starts do.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portOf, startEngine, stopEngine } from '../support/embedded-engine-process.js';
import { tinyModel } from '../support/test-models.js';

let cacheDir: string;
let verdictPath: string;
const runWideCache = process.env.XDG_CACHE_HOME;

beforeAll(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), 'llmtray-binding-verdict-'));
  verdictPath = join(cacheDir, 'llmtray', 'cpu-binding-verdict.json');
  // The engines inherit this process's environment (embedded-engine-process.ts).
  process.env.XDG_CACHE_HOME = cacheDir;
});

afterAll(async () => {
  if (runWideCache === undefined) delete process.env.XDG_CACHE_HOME;
  else process.env.XDG_CACHE_HOME = runWideCache;
  await rm(cacheDir, { recursive: true, force: true });
});

/**
 * Starts a CPU engine (-ngl 0: only the CPU runtime keeps a verdict), waits until it serves a
 * completion, stops it, and gives back its runtime line: which way the binding was loaded.
 */
async function startAndServe(): Promise<string> {
  const engine = startEngine(['-m', await tinyModel(), '-c', '512', '-t', '1', '-ngl', '0', '--port', '0']);
  try {
    const port = await portOf(engine);
    await engine.waitFor(/srv {2}llama_server: model loaded/);
    const answer = await fetch(`http://127.0.0.1:${port}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'hello', max_tokens: 2 }),
    });
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(2);
    const [line] = await engine.waitFor(/runtime: .*/);
    return line;
  } finally {
    await stopEngine(engine);
  }
}

describe("the CPU runtime's binding test", () => {
  it('runs at the first start, which keeps its verdict; the next start loads the binding without it and serves', async () => {
    expect(await startAndServe()).toBe(`runtime: tested the binding (no verdict: none kept yet); verdict kept in ${verdictPath}`);
    const kept = JSON.parse(await readFile(verdictPath, 'utf8')) as { binding: { bindingPath: string } };
    expect(kept.binding.bindingPath).toMatch(/llama-addon\.node$/);

    expect(await startAndServe()).toBe(`runtime: loaded ${kept.binding.bindingPath} without its test: it passed on this machine (${verdictPath})`);
  }, 120_000);

  it.each([
    [
      "another machine's (a copied cache folder: its key names another CPU)",
      (text: string) => {
        const kept = JSON.parse(text) as { key: string };
        return JSON.stringify({ ...kept, key: JSON.stringify({ ...(JSON.parse(kept.key) as object), cpu: 'another CPU' }) });
      },
      'the binding, node-llama-cpp, the CPU, the kernel, glibc or Node changed since it was tested',
    ],
    ['not JSON (cut short)', (text: string) => text.slice(0, 40), 'is unreadable (not JSON)'],
    [
      'naming a binding outside node-llama-cpp\'s packages',
      (text: string) => {
        const kept = JSON.parse(text) as { binding: object };
        return JSON.stringify({ ...kept, binding: { ...kept.binding, bindingPath: '/tmp/elsewhere/llama-addon.node' } });
      },
      "its binding /tmp/elsewhere/llama-addon.node is outside node-llama-cpp's packages",
    ],
  ])('is run again when the kept verdict is %s, and the engine serves', async (_case, spoil, why) => {
    // A good verdict first (each case ends with one kept again), then spoiled as the case says.
    if (!existsSync(verdictPath)) await startAndServe();
    await writeFile(verdictPath, spoil(await readFile(verdictPath, 'utf8')));
    const line = await startAndServe();
    expect(line).toMatch(/^runtime: tested the binding \(no verdict: .*\); verdict kept in /);
    expect(line).toContain(why);
  }, 120_000);
});
