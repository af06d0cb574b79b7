import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { classifyFailure, LaunchError, type FailureEvidence } from '../../../core/engine/failure-classifier.js';

/** A captured log, without the fixture's own '# ' header lines. */
function fixture(name: string): string[] {
  const text = readFileSync(new URL(`../../fixtures/llama-logs/${name}`, import.meta.url), 'utf8');
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('# '));
}

function evidence(partial: Partial<FailureEvidence>): FailureEvidence {
  return { exitCode: 1, signal: null, log: [], timedOutWaitingForReady: false, stalledWithRequestsInFlight: false, ...partial };
}

describe('classifyFailure on real llama.cpp output', () => {
  const table: { log: string; exitCode: number | null; signal: string | null; kind: string; reason: string }[] = [
    { log: 'server-kv-cache-oom.log', exitCode: 1, signal: null, kind: 'oom', reason: 'failed to allocate buffer for kv cache' },
    {
      log: 'server-weights-oom-sigabrt.log', exitCode: null, signal: 'SIGABRT', kind: 'oom',
      reason: 'insufficient memory (attempted to allocate  19.73 MB)',
    },
    { log: 'server-truncated-header.log', exitCode: 1, signal: null, kind: 'crash', reason: 'failed to read key-value pairs' },
    {
      log: 'server-truncated-data.log', exitCode: 1, signal: null, kind: 'crash',
      reason: "tensor 'blk.0.attn_q.weight' data is not within the file bounds, model is corrupted or incomplete",
    },
    {
      log: 'server-missing-file.log', exitCode: 1, signal: null, kind: 'crash',
      reason: "failed to open GGUF file '/nonexistent/model.gguf' (No such file or directory)",
    },
    { log: 'node-llama-cpp-context-oom.log', exitCode: 1, signal: null, kind: 'oom', reason: 'failed to allocate buffer for kv cache' },
    {
      log: 'node-llama-cpp-context-precheck.log', exitCode: 1, signal: null, kind: 'oom',
      reason: 'A context size of 2097152 is too large for the available RAM',
    },
    { log: 'node-llama-cpp-weights-mmap.log', exitCode: 1, signal: null, kind: 'oom', reason: 'mmap failed: Cannot allocate memory' },
    { log: 'node-llama-cpp-weights-bad-alloc.log', exitCode: 1, signal: null, kind: 'oom', reason: 'std::bad_alloc' },
    {
      log: 'node-v8-heap-oom.log', exitCode: 134, signal: null, kind: 'oom',
      reason: 'FATAL ERROR: NewSpace::EnsureCurrentCapacity Allocation failed - JavaScript heap out of memory',
    },
    {
      log: 'node-llama-cpp-bad-magic.log', exitCode: 1, signal: null, kind: 'crash',
      reason: 'Invalid GGUF magic. Expected "GGUF" but got "\\u0000\\u0000\\u0000\\u0000"',
    },
    {
      log: 'node-llama-cpp-random-bytes.log', exitCode: 1, signal: null, kind: 'crash',
      reason: 'Unsupported GGUF version "2180680215". Reading the file as GGUF version 3',
    },
    {
      log: 'node-llama-cpp-truncated-data.log', exitCode: 1, signal: null, kind: 'crash',
      reason: "tensor 'blk.0.attn_q.weight' data is not within the file bounds, model is corrupted or incomplete",
    },
    { log: 'cuda-oom-weights.log', exitCode: 1, signal: null, kind: 'oom', reason: 'unable to allocate CUDA0 buffer' },
    {
      log: 'cuda-pinned-fallback-then-bad-arch.log', exitCode: 1, signal: null, kind: 'crash',
      reason: "unknown model architecture: 'notarealarch'",
    },
    {
      log: 'embedded-corrupt.log', exitCode: 1, signal: null, kind: 'crash',
      reason: "tensor 'blk.1.attn_norm.weight' data is not within the file bounds, model is corrupted or incomplete",
    },
    { log: 'embedded-empty-file.log', exitCode: 1, signal: null, kind: 'crash', reason: 'Invalid GGUF magic. Expected "GGUF" but got "    ".' },
    {
      log: 'embedded-missing-file.log', exitCode: 1, signal: null, kind: 'crash',
      reason: "ENOENT: no such file or directory, open 'models/missing.gguf'",
    },
    { log: 'vulkan-oom.log', exitCode: null, signal: 'SIGABRT', kind: 'oom', reason: 'Device memory allocation of size 118497280 failed.' },
  ];

  it.each(table)('$log → $kind', ({ log, exitCode, signal, kind, reason }) => {
    expect(classifyFailure(evidence({ exitCode, signal, log: fixture(log) }))).toEqual({ kind, reason });
  });

  it('reads a SIGKILL with no error line while loading as the OOM killer', () => {
    const result = classifyFailure(evidence({ exitCode: null, signal: 'SIGKILL', log: fixture('segfault-no-output.log') }));
    expect(result.kind).toBe('oom');
    expect(result.reason).toMatch(/out-of-memory killer/);
  });

  it('reads exit code 137 (SIGKILL through a shell) the same way', () => {
    expect(classifyFailure(evidence({ exitCode: 137, log: [] })).kind).toBe('oom');
  });

  it('reads a silent SIGKILL of a server that was already serving as a crash', () => {
    const result = classifyFailure(evidence({ exitCode: null, signal: 'SIGKILL', log: fixture('server-ready.log'), diedAfterReady: true }));
    expect(result.kind).toBe('crash');
    expect(result.reason).toMatch(/SIGKILL while serving/);
  });

  it('keeps a SIGKILL that follows an allocation failure an oom, whenever it came', () => {
    const log = fixture('server-kv-cache-oom.log');
    expect(classifyFailure(evidence({ exitCode: null, signal: 'SIGKILL', log, diedAfterReady: true })).kind).toBe('oom');
  });

  it('calls a segfault without an error line a crash and says how it ended', () => {
    const result = classifyFailure(evidence({ exitCode: null, signal: 'SIGSEGV', log: fixture('segfault-no-output.log') }));
    expect(result).toEqual({ kind: 'crash', reason: 'it was terminated by SIGSEGV without an error line; its log has the details' });
  });

  it('never takes info or warning lines of a healthy start as the cause', () => {
    const result = classifyFailure(evidence({ exitCode: 1, log: fixture('server-ready.log') }));
    expect(result).toEqual({ kind: 'crash', reason: 'it exited with code 1 without an error line; its log has the details' });
  });

  it('calls a load timeout a hang, with the timeout and the last line it printed', () => {
    const result = classifyFailure(
      evidence({ exitCode: null, signal: 'SIGTERM', log: fixture('segfault-no-output.log'), timedOutWaitingForReady: true, loadTimeoutMs: 45_000 }),
    );
    expect(result.kind).toBe('hang');
    expect(result.reason).toBe(
      'it did not become ready within the load timeout (45 s); its last log line was "0.00.097.998 I cmn          init: llama threadpool init, n_threads = 1"',
    );
  });

  it('calls a stalled decode a hang even though the process is alive', () => {
    const result = classifyFailure(evidence({ exitCode: null, signal: null, stalledWithRequestsInFlight: true }));
    expect(result).toEqual({ kind: 'hang', reason: 'it stopped producing tokens while requests were in flight; it printed nothing' });
  });

  it('prefers the hang verdict over allocation lines when the load timed out', () => {
    const log = fixture('server-kv-cache-oom.log');
    expect(classifyFailure(evidence({ log, timedOutWaitingForReady: true })).kind).toBe('hang');
  });
});

describe('LaunchError', () => {
  it('carries the classification and says it with the model name', () => {
    const error = new LaunchError('qwen-7b', { kind: 'oom', reason: 'failed to allocate buffer for kv cache', exitCode: 1, signal: null, logTail: ['x'] });
    expect(error).toBeInstanceOf(Error);
    expect(error.kind).toBe('oom');
    expect(error.message).toBe("model server for 'qwen-7b' failed (oom): failed to allocate buffer for kv cache");
    expect(error.logTail).toEqual(['x']);
  });
});
