// Ollama's pull progress from llmtray's pull views: the line order of docs/api.md "Pull a Model"
// (test/fixtures/ollama-api), each file's bytes said when they moved, a failure as an error line,
// and the names /api/pull takes and refuses.
import { describe, expect, it } from 'vitest';
import type { PullView } from '../../../../core/contracts/hub/pulls.js';
import { PullProgressToOllama } from '../../../../core/router/ollama/pull-progress.js';
import { hubPullName, readPullBody } from '../../../../core/router/ollama/pulls.js';

const SHA = 'a'.repeat(12) + 'b'.repeat(52);
const view = (change: Partial<PullView> & { received?: number }): PullView => ({
  id: 'hf.co/o/r:Q4_K_M',
  repo: 'o/r',
  state: 'downloading',
  files: [{ path: 'r-Q4_K_M.gguf', sizeBytes: 1000, receivedBytes: change.received ?? 0, sha256: SHA }],
  receivedBytes: change.received ?? 0,
  totalBytes: 1000,
  bytesPerSecond: 0,
  secondsLeft: null,
  message: 'downloading',
  startedAt: 0,
  ...change,
});

describe('PullProgressToOllama', () => {
  it('tells a pull as Ollama does: the file by its digest with total and completed, then verifying, writing manifest, success', () => {
    const progress = new PullProgressToOllama();
    const lines = [
      ...progress.next(view({ received: 0 })),
      ...progress.next(view({ received: 400 })),
      ...progress.next(view({ received: 400 })),
      ...progress.next(view({ received: 1000, state: 'verifying' })),
      ...progress.next(view({ received: 1000, state: 'done', servedAs: 'hf.co/o/r:Q4_K_M' })),
    ];
    const digest = `sha256:${SHA}`;
    expect(lines).toEqual([
      { status: 'pulling aaaaaaaaaaaa', digest, total: 1000, completed: 0 },
      { status: 'pulling aaaaaaaaaaaa', digest, total: 1000, completed: 400 },
      { status: 'pulling aaaaaaaaaaaa', digest, total: 1000, completed: 1000 },
      { status: 'verifying sha256 digest' },
      { status: 'writing manifest' },
      { status: 'success' },
    ]);
    expect(progress.next(view({ state: 'done', servedAs: 'x' }))).toEqual([]);
  });

  it('says a file whole when the pull is done though its last bytes were not told (the throttle swallowed them)', () => {
    const progress = new PullProgressToOllama();
    progress.next(view({ received: 300 }));
    const end = progress.next(view({ received: 300, state: 'done', servedAs: 'hf.co/o/r:Q4_K_M' }));
    expect(end[0]).toMatchObject({ completed: 1000, total: 1000 });
    expect(end.at(-1)).toEqual({ status: 'success' });
  });

  it('ends a failed pull with an error line carrying its reason, and a pulled model llmtray does not list with an error rather than success', () => {
    const failed = new PullProgressToOllama().next(view({ state: 'failed', message: 'the disk is full' }));
    expect(failed.at(-1)).toEqual({ error: 'the pull of hf.co/o/r:Q4_K_M failed: the disk is full' });
    const unlisted = new PullProgressToOllama().next(view({ state: 'done', message: 'pulled, but llmtray does not list it' }));
    expect(unlisted.at(-1)).toEqual({ error: 'pulled, but llmtray does not list it' });
    expect(unlisted).not.toContainEqual({ status: 'success' });
  });
});

describe("/api/pull's names and fields", () => {
  it('takes hf.co/ names, with :latest meaning the repo default', () => {
    expect(hubPullName('hf.co/o/r:Q4_K_M')).toEqual({ ok: true, name: 'hf.co/o/r:Q4_K_M' });
    expect(hubPullName('hf.co/o/r:latest')).toEqual({ ok: true, name: 'hf.co/o/r' });
    expect(hubPullName('huggingface.co/o/r')).toEqual({ ok: true, name: 'huggingface.co/o/r' });
  });

  it("refuses Ollama library names saying to pull an hf.co/ name", () => {
    for (const name of ['llama3.2', 'llama3.2:1b', 'library/llama3.2', 'someone/model:tag']) {
      const read = hubPullName(name);
      expect(read.ok).toBe(false);
      if (!read.ok) expect(read.error.message).toMatch(/Ollama's library.*Pull an hf\.co\/ name instead/);
    }
  });

  it('refuses a field it does not read by name, and a stream that is not a boolean', () => {
    const extra = readPullBody({ model: 'hf.co/o/r', username: 'x' });
    expect(extra.ok === false && extra.error.message).toMatch(/'username' cannot be honoured/);
    const stream = readPullBody({ model: 'hf.co/o/r', stream: 'yes' });
    expect(stream.ok === false && stream.error.param).toBe('stream');
    expect(readPullBody({ name: 'hf.co/o/r', insecure: true, stream: false })).toEqual({ ok: true, name: 'hf.co/o/r', stream: false });
  });
});
