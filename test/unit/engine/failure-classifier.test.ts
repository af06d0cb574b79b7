import { readdirSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Catalog, type CatalogModel } from '../../../core/catalog/catalog.js';
import { layoutGguf } from '../../../core/catalog/demo/gguf-encoder.js';
import { seededRandom } from '../../../core/catalog/demo/seeded-random.js';
import { spmVocab } from '../../../core/catalog/demo/spm-vocab.js';
import { referenceProblems } from '../../../core/catalog/references.js';
import { vocabularyFingerprint } from '../../../core/catalog/vocabulary.js';
import { errorMessage } from '../../../core/contracts/error-message.js';
import { launchSpecFor, type LaunchSpecSources } from '../../../core/daemon/launch-specs.js';
import { classifyFailure, classifySetupFailure, LaunchError, type FailureEvidence } from '../../../core/engine/failure-classifier.js';
import { testModelDir, tinyModel } from '../../support/test-models.js';

/** A captured log, without the fixture's own '# ' header lines. */
function fixture(name: string): string[] {
  const text = readFileSync(new URL(`../../fixtures/llama-logs/${name}`, import.meta.url), 'utf8');
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('# '));
}

function evidence(partial: Partial<FailureEvidence>): FailureEvidence {
  return { exitCode: 1, signal: null, log: [], timedOutWaitingForReady: false, ...partial };
}

/** Captured logs that are not one failure each: buffer-size lines, a healthy start, a log whose signal decides. */
const NOT_IN_THE_TABLE = ['buffer-sizes-cuda.log', 'cpu-amx-xeon.log', 'cpu-repack-epyc.log', 'server-ready.log', 'server-draft-vocab-mismatch-serves.log', 'segfault-no-output.log'];

/** Card faults, each with the device its log names (gpu-fault.ts): the machine in the way, not the model. */
const GPU_FAULTS: { log: string; exitCode: number | null; signal: string | null; kind: string; reason: string; cudaDevice: number | null; busAddress: string | null }[] = [
  {
    log: 'cuda-illegal-memory-access.log', exitCode: null, signal: 'SIGABRT', kind: 'crash', cudaDevice: 1, busAddress: null,
    reason: 'CUDA error: an illegal memory access was encountered (on CUDA device 1: a fault of the card or of the engine)',
  },
  {
    log: 'cuda-unspecified-launch-failure.log', exitCode: null, signal: 'SIGABRT', kind: 'crash', cudaDevice: 1, busAddress: null,
    reason: 'CUDA error: unspecified launch failure (on CUDA device 1: a fault of the card or of the engine)',
  },
  {
    log: 'gpu-fallen-off-the-bus.log', exitCode: null, signal: 'SIGABRT', kind: 'environment', cudaDevice: null, busAddress: '0000:06:00.0',
    reason: 'NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus. (a fault of GPU 0000:06:00.0, not of the model)',
  },
  {
    log: 'gpu-lost-nvidia-smi.log', exitCode: 15, signal: null, kind: 'environment', cudaDevice: null, busAddress: '0000:02:00.0',
    reason: 'Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU (a fault of GPU 0000:02:00.0, not of the model)',
  },
];

describe('classifyFailure on a fault of the card', () => {
  it.each(GPU_FAULTS)('$log → $kind, naming the device', ({ log, exitCode, signal, kind, reason, cudaDevice, busAddress }) => {
    const lines = fixture(log);
    const result = classifyFailure(evidence({ exitCode, signal, log: lines, diedAfterReady: true }));
    expect(result).toEqual({ kind, reason, gpuFault: { line: expect.any(String), cudaDevice, busAddress, cardLost: kind === 'environment' } });
  });

  it('calls a lost card the machine in the way even while loading, where its allocations fail too', () => {
    const lines = [...fixture('gpu-fallen-off-the-bus.log'), 'llama_model_load: error loading model: unable to allocate CUDA1 buffer'];
    expect(classifyFailure(evidence({ log: lines })).kind).toBe('environment');
  });

  it('leaves an out-of-memory CUDA error an oom and a build for another card a crash: neither is a fault of the card', () => {
    const oom = classifyFailure(evidence({ log: ['CUDA error: out of memory', '  current device: 0, in function ggml_backend_cuda_buffer_type_alloc_buffer at ggml-cuda.cu:100'] }));
    expect(oom.kind).toBe('oom');
    expect(oom.gpuFault).toBeUndefined();
    const build = classifyFailure(evidence({ exitCode: null, signal: 'SIGABRT', log: ['ggml_cuda_compute_forward: SCALE failed', 'CUDA error: no kernel image is available for execution on the device', 'current device: 0, in function ggml_cuda_compute_forward at ggml-cuda.cu:2761'] }));
    expect(build.kind).toBe('crash');
    expect(build.gpuFault).toBeUndefined();
  });
});

describe('classifyFailure on real llama.cpp output', () => {
  const table: { log: string; exitCode: number | null; signal: string | null; kind: string; reason: string }[] = [
    { log: 'server-kv-cache-oom.log', exitCode: 1, signal: null, kind: 'oom', reason: 'failed to allocate buffer for kv cache' },
    {
      log: 'server-weights-oom-sigabrt.log', exitCode: null, signal: 'SIGABRT', kind: 'oom',
      reason: 'insufficient memory (attempted to allocate  19.73 MB)',
    },
    { log: 'server-truncated-header.log', exitCode: 1, signal: null, kind: 'invalid', reason: 'failed to read key-value pairs' },
    {
      log: 'server-truncated-data.log', exitCode: 1, signal: null, kind: 'invalid',
      reason: "tensor 'blk.0.attn_q.weight' data is not within the file bounds, model is corrupted or incomplete",
    },
    { log: 'server-truncated-fixed-header.log', exitCode: 1, signal: null, kind: 'invalid', reason: 'failed to read header' },
    { log: 'server-truncated-tensor-info.log', exitCode: 1, signal: null, kind: 'invalid', reason: 'failed to read tensor info' },
    { log: 'server-empty-file.log', exitCode: 1, signal: null, kind: 'invalid', reason: 'failed to read magic' },
    { log: 'server-bad-magic.log', exitCode: 1, signal: null, kind: 'invalid', reason: "invalid magic characters: '<!DO', expected 'GGUF'" },
    { log: 'server-unknown-architecture.log', exitCode: 1, signal: null, kind: 'invalid', reason: "unknown model architecture: 'notarealarch'" },
    {
      log: 'server-missing-file.log', exitCode: 1, signal: null, kind: 'invalid',
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
      log: 'node-llama-cpp-bad-magic.log', exitCode: 1, signal: null, kind: 'invalid',
      reason: 'Invalid GGUF magic. Expected "GGUF" but got "\\u0000\\u0000\\u0000\\u0000"',
    },
    {
      log: 'node-llama-cpp-random-bytes.log', exitCode: 1, signal: null, kind: 'invalid',
      reason: 'Unsupported GGUF version "2180680215". Reading the file as GGUF version 3',
    },
    {
      log: 'node-llama-cpp-truncated-data.log', exitCode: 1, signal: null, kind: 'invalid',
      reason: "tensor 'blk.0.attn_q.weight' data is not within the file bounds, model is corrupted or incomplete",
    },
    { log: 'cuda-oom-weights.log', exitCode: 1, signal: null, kind: 'oom', reason: 'unable to allocate CUDA0 buffer' },
    {
      // The pinned-memory line is an allocation failure llama.cpp recovers from: it must not hide the real cause.
      log: 'cuda-pinned-fallback-then-bad-arch.log', exitCode: 1, signal: null, kind: 'invalid',
      reason: "unknown model architecture: 'notarealarch'",
    },
    {
      log: 'embedded-corrupt.log', exitCode: 1, signal: null, kind: 'invalid',
      reason: "tensor 'blk.1.attn_norm.weight' data is not within the file bounds, model is corrupted or incomplete",
    },
    { log: 'embedded-empty-file.log', exitCode: 1, signal: null, kind: 'invalid', reason: 'Invalid GGUF magic. Expected "GGUF" but got "    ".' },
    { log: 'embedded-bad-magic.log', exitCode: 1, signal: null, kind: 'invalid', reason: 'Invalid GGUF magic. Expected "GGUF" but got "<!DO".' },
    { log: 'embedded-truncated-header.log', exitCode: 1, signal: null, kind: 'invalid', reason: 'failed to read key-value pairs' },
    { log: 'embedded-truncated-tensor-info.log', exitCode: 1, signal: null, kind: 'invalid', reason: 'failed to read tensor info' },
    { log: 'embedded-unknown-architecture.log', exitCode: 1, signal: null, kind: 'invalid', reason: "unknown model architecture: 'notarealarch'" },
    {
      // Gone between the catalog's look and the load (a drive unplugged): it may come back as it was.
      log: 'embedded-missing-file.log', exitCode: 1, signal: null, kind: 'environment',
      reason: "ENOENT: no such file or directory, open 'models/missing.gguf' (the model file is missing: its drive unplugged, or the file moved)",
    },
    {
      log: 'embedded-draft-vocab-mismatch.log', exitCode: 1, signal: null, kind: 'invalid',
      reason: "the draft model 'models/draft-other-vocab.gguf' is not compatible with the target model: special tokens differ (bos 1 vs 3, eos 2 vs 2)",
    },
    {
      // "No such file or directory" about a file other than the model: the engine's setup, not the model, is at fault.
      log: 'embedded-missing-api-key-file.log', exitCode: 1, signal: null, kind: 'crash',
      reason: "--api-key-file: cannot read keys/missing.key: ENOENT: no such file or directory, open 'keys/missing.key'",
    },
    { log: 'vulkan-oom.log', exitCode: null, signal: 'SIGABRT', kind: 'oom', reason: 'Device memory allocation of size 118497280 failed.' },
  ];

  it.each(table)('$log → $kind', ({ log, exitCode, signal, kind, reason }) => {
    expect(classifyFailure(evidence({ exitCode, signal, log: fixture(log) }))).toEqual({ kind, reason });
  });

  it('has an expected verdict for every captured failure log', () => {
    const captured = readdirSync(new URL('../../fixtures/llama-logs/', import.meta.url)).filter((name) => !NOT_IN_THE_TABLE.includes(name));
    expect(captured.sort()).toEqual([...table, ...GPU_FAULTS].map((row) => row.log).sort());
  });

  it('calls it an oom when an allocation failed, whatever else in the log says the file is broken', () => {
    const broken = fixture('server-truncated-data.log');
    const allocation = fixture('server-kv-cache-oom.log');
    const expected = { kind: 'oom', reason: 'failed to allocate buffer for kv cache' };
    expect(classifyFailure(evidence({ log: [...broken, ...allocation] }))).toEqual(expected);
    expect(classifyFailure(evidence({ log: [...allocation, ...broken] }))).toEqual(expected);
    expect(classifyFailure(evidence({ exitCode: null, signal: 'SIGABRT', log: [...fixture('embedded-unknown-architecture.log'), ...fixture('vulkan-oom.log')] })).kind).toBe('oom');
  });

  it('calls a crash after ready a crash, though the load logged that the draft speaks another vocabulary', () => {
    const log = fixture('server-draft-vocab-mismatch-serves.log');
    expect(log).toContainEqual(expect.stringContaining('E spec common_specu: the target and draft vocabs are not compatible'));
    const result = classifyFailure(evidence({ exitCode: null, signal: 'SIGSEGV', log, diedAfterReady: true }));
    expect(result.kind).toBe('crash');
  });

  it('judges no file broken once the server was ready: it had loaded them', () => {
    const result = classifyFailure(evidence({ exitCode: null, signal: 'SIGBUS', log: fixture('embedded-corrupt.log'), diedAfterReady: true }));
    expect(result.kind).toBe('crash');
  });

  it('keeps a load timeout a hang even when the log says the file is broken', () => {
    const result = classifyFailure(evidence({ exitCode: null, signal: 'SIGTERM', log: fixture('embedded-corrupt.log'), timedOutWaitingForReady: true }));
    expect(result.kind).toBe('hang');
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

describe("classifySetupFailure on the catalog's own sentences", () => {
  // Real files through the real catalog: the sentences are whatever it says about them today.
  const broken: Record<string, (dir: string) => Promise<void>> = {
    'missing': async () => undefined,
    'empty': (dir) => writeFile(join(dir, 'empty.gguf'), ''),
    'web-page': (dir) => writeFile(join(dir, 'web-page.gguf'), '<!DOCTYPE html>\n<html><body>Not Found</body></html>\n'),
    'cut-in-header': async (dir) => writeFile(join(dir, 'cut-in-header.gguf'), (await readFile(await tinyModel())).subarray(0, 600)),
    'garbage-after-magic': (dir) => {
      const bytes = new Float32Array(1024);
      seededRandom(3).fillUniform(bytes, 1e30);
      return writeFile(join(dir, 'garbage-after-magic.gguf'), Buffer.concat([Buffer.from('GGUF'), Buffer.from(bytes.buffer)]));
    },
    'unknown-arch': (dir) =>
      writeFile(join(dir, 'unknown-arch.gguf'), layoutGguf(new Map([['general.architecture', { kind: 'string', value: 'notarealarch' }]]), []).header),
    'folder': (dir) => mkdir(join(dir, 'folder.gguf')),
  };
  let models: readonly CatalogModel[] = [];
  let splitFolder = '';

  beforeAll(async () => {
    const dir = join(testModelDir(), 'setup-failures');
    splitFolder = join(dir, 'split');
    await mkdir(splitFolder, { recursive: true });
    for (const write of Object.values(broken)) await write(dir);
    await copyFile(await tinyModel(), join(splitFolder, 'halves-00001-of-00002.gguf'));
    const configPath = join(dir, 'config.yaml');
    const entries = Object.keys(broken).map((id) => `  - {id: ${id}, path: ${join(dir, `${id}.gguf`)}}`);
    entries.push(`  - {id: under-a-file, path: ${join(dir, 'empty.gguf', 'model.gguf')}}`);
    await writeFile(configPath, `modelDirs: [${splitFolder}]\nmodels:\n${entries.join('\n')}\n`);
    // settleMs 0: the split part copied a moment ago is finished, not being downloaded.
    const catalog = await Catalog.open({ configPath, dataDir: join(dir, 'data'), facts: { platform: 'linux', env: {}, homeDir: dir }, settleMs: 0 });
    models = catalog.models();
  });

  it.each([...Object.keys(broken).filter((id) => id !== 'missing'), 'under-a-file'])('%s: invalid, with the catalog sentence as the reason', (id) => {
    const error = models.find((m) => m.id === id)?.metadataError;
    if (!error) throw new Error(`the catalog found nothing wrong with ${id}`);
    expect(classifySetupFailure(error)).toEqual({ kind: 'invalid', reason: error });
  });

  it('missing: the machine in the way (a drive unplugged, a folder renamed), not the model', () => {
    const error = models.find((m) => m.id === 'missing')?.metadataError;
    if (!error) throw new Error('the catalog found nothing wrong with missing');
    expect(classifySetupFailure(error)).toEqual({ kind: 'environment', reason: error });
  });

  it("a llama-server not found at the daemon's start, in launchSpecFor's own sentence: invalid, since no relaunch finds it", () => {
    const message = launchRefusal({ noLlamaServer: 'the configured llama-server /opt/no/llama-server is not an executable file; fix engines.llamaServer in the config or remove it to search PATH' });
    expect(message).toContain('/opt/no/llama-server');
    expect(classifySetupFailure(message)).toEqual({ kind: 'invalid', reason: message });
  });

  it.each([
    ["the data dir's disk is full: 0 B free (/data): could not write its API key file /data/engine-keys/k: ENOSPC: no space left on device, open '/data/engine-keys/k'"],
    ["could not write its API key file /data/engine-keys/k: EROFS: read-only file system, open '/data/engine-keys/k'"],
    ['could not start /opt/llama.cpp/llama-server: spawn /opt/llama.cpp/llama-server ENOENT'],
    ['could not start /opt/llama.cpp/llama-server: spawn /opt/llama.cpp/llama-server EACCES'],
  ])('%s: the machine in the way', (message) => {
    expect(classifySetupFailure(message)).toEqual({ kind: 'environment', reason: message });
  });

  it('an engine that cannot read its working directory: the machine in the way, said so', () => {
    const log = ['[node-llama-cpp] Error: ENOENT: no such file or directory, uv_cwd', '    at process.wrappedCwd (node:internal/bootstrap/switches/does_own_process_state:144:28)'];
    const failure = classifyFailure({ exitCode: 1, signal: null, log, timedOutWaitingForReady: false });
    expect(failure.kind).toBe('environment');
    expect(failure.reason).toMatch(/uv_cwd.*\(its working directory is gone\)$/);
  });

  it('a model file gone between the catalog’s look and the load: the machine in the way, said so', () => {
    const log = ["[node-llama-cpp] Error: ENOENT: no such file or directory, open '/media/usb/qwen.gguf'"];
    expect(classifyFailure({ exitCode: 1, signal: null, log, timedOutWaitingForReady: false })).toEqual({
      kind: 'environment',
      reason: expect.stringMatching(/open '\/media\/usb\/qwen\.gguf' \(the model file is missing: its drive unplugged, or the file moved\)$/),
    });
  });

  it('a crash whose log merely names a file is still a crash', () => {
    expect(classifyFailure({ exitCode: 1, signal: null, log: ['error: could not open /data/cache.bin'], timedOutWaitingForReady: false }).kind).toBe('crash');
  });

  it('a split model with a part missing: invalid', () => {
    const error = models.find((m) => m.path.startsWith(splitFolder))?.metadataError;
    if (!error) throw new Error('the catalog found nothing wrong with the split model');
    expect(classifySetupFailure(error).kind).toBe('invalid');
  });

  it('a draft of another vocabulary: invalid', () => {
    const vocab = spmVocab();
    const primary = vocabularyFingerprint({ model: 'llama', tokens: vocab.tokens, bosId: vocab.bosId, eosId: vocab.eosId, addBos: true });
    const other = vocabularyFingerprint({ model: 'gpt2', tokens: vocab.tokens, bosId: vocab.bosId, eosId: vocab.eosId, addBos: true });
    const [problem] = referenceProblems(
      [{ id: 'main', aliases: [], draftId: 'small', configIndex: 0, vocabulary: primary }, { id: 'small', aliases: [], vocabulary: other }],
      'config.yaml',
    );
    if (!problem) throw new Error('the vocabulary check found nothing wrong');
    expect(classifySetupFailure(problem.message)).toEqual({ kind: 'invalid', reason: problem.message });
  });

  it.each([
    "'qwen-7b' is no longer in the catalog",
    // A catalog sentence a retry may get past: an operating-system error while reading the header.
    '/m/qwen.gguf: cannot read the model file: EIO: i/o error, read',
  ])('stays a crash: %s', (message) => {
    expect(classifySetupFailure(message)).toEqual({ kind: 'crash', reason: message });
  });
});

/** What launchSpecFor throws for a model that asks for llama-server where none was found. */
function launchRefusal(sources: Pick<LaunchSpecSources, 'noLlamaServer'>): string {
  const model = { id: 'needs', engine: 'llama-server', metadataError: null } as unknown as CatalogModel;
  try {
    launchSpecFor('needs', { resolve: () => model, cpuOnly: () => true, llamaServerPath: null, ...sources });
  } catch (error) {
    return errorMessage(error);
  }
  throw new Error('launchSpecFor started a model that asks for a llama-server there is none of');
}
