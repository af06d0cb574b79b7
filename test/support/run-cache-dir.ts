// Every project's global setup (vitest.config.ts): one cache folder for the whole run, as
// XDG_CACHE_HOME, for the engines the tests start and everything else that caches there.
//
// Why: the embedded engine keeps node-llama-cpp's binding-test verdict in the user's cache
// (core/engine/embedded/runtime/binding-verdict.ts). In a folder of the run's own, the run's first CPU
// engine tests the binding and every later one skips the test (0.4 s and half a CPU-second per
// engine start, ~170 of them), while a developer's ~/.cache is neither read nor written: no
// verdict from the machine's past decides what the run's first start does.
//
// Vitest runs each project's global setup in its main process, before the workers start (they
// inherit the variable): the first sets it up, the others find it; only the first removes it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MARK = 'LLMTRAY_TEST_RUN_CACHE';

export default function setup(): (() => void) | undefined {
  if (process.env[MARK] !== undefined && process.env.XDG_CACHE_HOME === process.env[MARK]) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'llmtray-test-cache-'));
  process.env[MARK] = dir;
  process.env.XDG_CACHE_HOME = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
