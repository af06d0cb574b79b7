import type { FailureKind } from '../contracts/recovery.js';
import { gpuFaultDevice, gpuFaultIn, type GpuFault } from './gpu-fault.js';
// Failure classifier: turns how a model server ended (exit code, signal, its log) into the
// recovery ladder's cause and a sentence a person can act on.
//
// Why read the log and not only the exit status: llama.cpp ends an out-of-memory load in three
// different ways — exit code 1 after "failed to allocate buffer for kv cache", SIGABRT from a
// GGML_ASSERT right after "insufficient memory", or a silent SIGKILL from the kernel's OOM
// killer. Judged by the exit status alone, the first two look like crashes and would be
// retried unchanged, which fails the same way every time.
//
// Why the reason is llama.cpp's own line: "failed to allocate buffer for kv cache" tells the
// person what to shrink; "exited with code 1" tells them nothing.
//
// Why `invalid` is told apart from `crash`: a corrupt, truncated or missing file fails the
// same way on every launch, and as a crash it was retried four times with backoff, so the
// first request for it waited 20 s for a 503. Its patterns are deliberately narrow: a
// transient crash taken for `invalid` is quarantined until a person notices, the worse error.

/** A failure the ladder can act on ('none' never comes out of here). */
export type LaunchFailureKind = Exclude<FailureKind, 'none'>;

export interface FailureEvidence {
  /** The process's exit code, or null when a signal ended it (or it never started). */
  exitCode: number | null;
  /** The signal that ended it (e.g. 'SIGKILL'), or null. */
  signal: string | null;
  /** Its stdout and stderr, in order, one entry per line (the supervisor's ring buffer). */
  log: readonly string[];
  /** It was still not ready when the load timeout ran out. */
  timedOutWaitingForReady: boolean;
  /** The load timeout it was given, for the hang sentence. */
  loadTimeoutMs?: number;
  /** It had been ready (serving) when it ended; absent means it died while loading. */
  diedAfterReady?: boolean;
}

export interface FailureClassification {
  kind: LaunchFailureKind;
  /** llama.cpp's own cause line where there is one; otherwise what was observed, in words. */
  reason: string;
  /** A fault of the card (gpu-fault.ts), with the device it names: kind 'environment'. Absent otherwise. */
  gpuFault?: GpuFault;
}

/**
 * Allocation failures, on any backend. Sources: llama.cpp's CPU and CUDA allocators, the
 * model loader's "unable to allocate CUDA0 buffer", mmap of the weights, std::bad_alloc,
 * node-llama-cpp's own pre-check, Vulkan, and V8 itself for the embedded engine.
 */
const OUT_OF_MEMORY = [
  /failed to allocate/i,
  /insufficient memory/i,
  /out of memory/i,
  /cudaMalloc failed/i,
  /unable to allocate/i,
  /mmap failed: Cannot allocate memory/i,
  /bad_alloc/,
  /InsufficientMemoryError/,
  /(?:vk_)?error_?out_?of_?device_?memory/i,
  /memory allocation of size \d+ failed/i,
  /JavaScript heap out of memory/i,
  /Fatal process OOM/i,
];

/**
 * Causes in a model server's log that no retry can fix, as llama.cpp, node-llama-cpp and the
 * embedded engine word them (matched against the cause text, prefixes already stripped). Each
 * is about the file, never about the machine's state: a missing API key file or a missing
 * shared library also say "No such file or directory", so only the model loader's own
 * wording counts.
 */
const UNLOADABLE_MODEL = [
  // Tensor data cut short (an interrupted download or copy): llama.cpp's model loader.
  /data is not within the file bounds/,
  // llama.cpp's GGUF reader on an empty file or a header cut short.
  /^failed to read (?:magic|header|key-value pairs|tensor info)$/,
  // Not a GGUF at all: llama.cpp, then node-llama-cpp (which checks before llama.cpp runs).
  /^invalid magic characters: '.*', expected 'GGUF'$/,
  /^Invalid GGUF magic\. /,
  // node-llama-cpp on "GGUF" followed by garbage (the version field is the first casualty).
  /^Unsupported GGUF version /,
  /^unknown model architecture: '/,
  // The model (or draft, or projector) is not there: llama.cpp, then the embedded engine.
  /^failed to open GGUF file '.*' \(No such file or directory\)$/,
  /^ENOENT: no such file or directory, open '/,
  // A draft of another vocabulary: the embedded engine's draftIncompatibility (model-loader.ts).
  // Not llama-server's "the target and draft vocabs are not compatible": today's build logs it
  // as an error, then serves without the draft (server-draft-vocab-mismatch-serves.log).
  /^the draft model '.*' is not compatible with the target model: /,
];

/**
 * The catalog's sentences (its `metadataError`) for a model that cannot be launched as
 * defined. Each names a fault of the file or the definition that stays until a person
 * changes one of them, which also changes the definition hash and lifts the quarantine.
 */
/**
 * The machine in the way, before any process ran: the model file gone (a drive unplugged, a
 * folder renamed: it may come back as it was), a data dir that takes no file (full, read-only),
 * an engine binary missing or not executable. Matched in the messages the catalog and the
 * supervisor word (catalog.ts, supervisor/launch.ts).
 */
const MACHINE_IN_THE_WAY = [
  /: cannot read the model file: ENOENT: /,
  /^could not write its API key file .*: (?:ENOSPC|EDQUOT|EROFS|EACCES|EPERM|ENOENT)\b/,
  /^the data dir's disk is full|^the data dir is (?:read-only|not writable)/,
  /^could not start .*: spawn .* (?:ENOENT|EACCES)\b/,
];

/**
 * The same in an engine's own log, with what it means: node-llama-cpp reads the working
 * directory at its start; a model file gone between the catalog's look and the load.
 */
const MACHINE_IN_THE_WAY_LOG: readonly { pattern: RegExp; means: string }[] = [
  { pattern: /uv_cwd/, means: 'its working directory is gone' },
  { pattern: /ENOENT: no such file or directory, open '[^']*\.gguf'|failed to open [^:]*\.gguf: No such file or directory/, means: 'the model file is missing: its drive unplugged, or the file moved' },
];

const UNUSABLE_DEFINITION = [
  // An engine that was not found when the daemon started (launch-specs.ts): no relaunch finds it
  // while the daemon runs, so its first request hears why at once rather than after four backoffs.
  /^'[^']*' asks for llama-server, but /,
  // A path through a file: a mistake in the definition, which no drive coming back fixes.
  /: cannot read the model file: ENOTDIR: /,
  /: expected a \.gguf file, found a folder$/,
  /: split model is missing parts? [\d, ]+ of \d+ in /,
  // Whatever the catalog's header reader rejected (not GGUF, cut short, corrupt lengths); an
  // operating-system error while reading ("EIO: i/o error") is worded "cannot read the model
  // file" instead, and stays a crash: a retry may get past it.
  /: not a readable GGUF model \(/,
  // An architecture without the keys llama.cpp needs (an unknown one, or a header cut short).
  /: cannot estimate its memory: the header has no /,
  /: expected a draft with the same vocabulary as /,
];

/**
 * Lines that report that something failed but not why: every loader layer above the real
 * cause repeats "failed to load model". Skipping them is what makes the chosen line the
 * most specific one.
 */
const CONSEQUENCE = [
  /^failed to (?:load model|create[ _]context)\b/i,
  /exiting due to model loading error/i,
  /encountered an error while trying to fit params/i,
  /cleaning up before exit/i,
];

/**
 * Wrappers whose text after the colon is the cause as the layer that understood it words
 * it ("failed to initialize the context: failed to allocate buffer for kv cache").
 */
const CAUSE_WRAPPER = /(?:error loading model|failed to initialize the context):\s*(.+)$/i;

/** Words that make an untagged line (old builds, node-llama-cpp, V8) an error line. */
const ERROR_WORDS =
  /\b(?:error|failed|failure|cannot|can't|unable|out of memory|insufficient|abort(?:ed)?|assert|exception|invalid|unsupported|corrupt(?:ed)?|not within|no such file|bad_alloc|fatal|segmentation)\b|GGML_ASSERT|Error:/i;

/**
 * The embedded engine's summary line, "failed to load model, 'path': InvalidGgufMagicError: …":
 * what follows the path is node-llama-cpp's error, the only cause there is when llama.cpp
 * printed none (a bad magic, a file that is not there).
 */
const EMBEDDED_FAILURE_PREFIX = /^(?:[a-z_]\w*:\s+)?failed to load model, '[^']*':\s+/i;

/** Today's llama-server prefix: "0.00.063.013 E " then an optional module tag ("srv    "). */
const LEVELLED_PREFIX = /^\d+\.\d+\.\d+\.\d+ ([DIWE]) (?:[a-z]{2,5}\s{2,})?/;
/** The same module tag without the level, as the embedded engine and older builds print it. */
const MODULE_TAG = /^[a-z]{2,5}\s{2,}/;

/** Classifies one launch or run failure. Pure. */
export function classifyFailure(evidence: FailureEvidence): FailureClassification {
  const causes = causeLines(evidence.log);
  if (evidence.timedOutWaitingForReady) {
    const limit = evidence.loadTimeoutMs === undefined ? '' : ` (${formatSeconds(evidence.loadTimeoutMs)})`;
    return { kind: 'hang', reason: `it did not become ready within the load timeout${limit}${lastWords(evidence.log)}` };
  }
  // A card that is lost, before the oom: it also fails its allocations, and a smaller relaunch
  // is not the fix. The machine in the way: the ladder never quarantines the model for it, and
  // relaunches it at full (gpu-fault.ts; a kernel that died on the card stays a crash, below).
  const gpuFault = gpuFaultIn(evidence.log);
  if (gpuFault?.cardLost === true) return { kind: 'environment', reason: `${gpuFault.line} (a fault of ${gpuFaultDevice(gpuFault)}, not of the model)`, gpuFault };
  for (const { pattern, means } of MACHINE_IN_THE_WAY_LOG) {
    const cause = causes.find((c) => pattern.test(c.raw));
    if (cause !== undefined) return { kind: 'environment', reason: `${cause.text} (${means})` };
  }
  const oomCause = causes.find((c) => c.wrapped && isOutOfMemory(c.text)) ?? causes.find((c) => isOutOfMemory(c.raw));
  if (oomCause !== undefined) return { kind: 'oom', reason: oomCause.text };
  // Only a load can be hopeless: a server that became ready had loaded its files, so whatever
  // its log said about them then did not stop it, and cannot explain a later death.
  const invalidCause = evidence.diedAfterReady === true ? undefined : causes.find((c) => UNLOADABLE_MODEL.some((re) => re.test(c.text)));
  if (invalidCause !== undefined) return { kind: 'invalid', reason: invalidCause.text };
  // A silent SIGKILL while loading is the OOM killer answering our own allocations: llama.cpp
  // allocates every buffer during the load. After ready its memory is flat, so a kill then was
  // about something else (a person's kill -9, room for another program) and a smaller relaunch
  // is not the fix; the crash ladder retries and, if it keeps happening, quarantines.
  const killed = evidence.signal === 'SIGKILL' || evidence.exitCode === 137;
  if (killed && causes.length === 0) {
    return evidence.diedAfterReady === true
      ? { kind: 'crash', reason: 'it was killed by SIGKILL while serving, without an error line (a kill -9, or the kernel\'s out-of-memory killer making room for another program)' }
      : { kind: 'oom', reason: 'it was killed by SIGKILL while loading, without an error line: that is how the kernel\'s out-of-memory killer ends a process' };
  }
  if (gpuFault !== null) return { kind: 'crash', reason: `${gpuFault.line} (on ${gpuFaultDevice(gpuFault)}: a fault of the card or of the engine)`, gpuFault };
  const cause = causes.find((c) => c.wrapped) ?? causes[0];
  return { kind: 'crash', reason: cause?.text ?? exitWords(evidence) };
}

/**
 * Classifies an error thrown while preparing a launch, before any process ran (the catalog's
 * `metadataError`, a draft not in the catalog, an engine that cannot be found): `environment`
 * for the machine in the way, `invalid` for a fault of the model's file or definition, `crash`
 * for everything else. The reason is the message unchanged. Pure.
 */
export function classifySetupFailure(message: string): FailureClassification {
  if (MACHINE_IN_THE_WAY.some((re) => re.test(message))) return { kind: 'environment', reason: message };
  const kind = UNUSABLE_DEFINITION.some((re) => re.test(message)) ? 'invalid' : 'crash';
  return { kind, reason: message };
}

interface CauseLine {
  /** The line as printed. */
  raw: string;
  /** The message without timestamps, module tags and function-name prefixes. */
  text: string;
  /** Extracted from a CAUSE_WRAPPER. */
  wrapped: boolean;
}

/** The log's error lines that carry a cause, in log order, consequences removed. */
function causeLines(log: readonly string[]): CauseLine[] {
  const out: CauseLine[] = [];
  for (const raw of log) {
    const message = errorMessage(raw);
    if (message === null) continue;
    const wrapper = CAUSE_WRAPPER.exec(message);
    const text = stripFunctionPrefixes((wrapper?.[1] ?? message).replace(EMBEDDED_FAILURE_PREFIX, ''));
    if (text === '' || CONSEQUENCE.some((re) => re.test(text))) continue;
    out.push({ raw, text, wrapped: wrapper !== null });
  }
  return out;
}

/** The message of an error line, or null when the line is not an error. */
function errorMessage(raw: string): string | null {
  const line = raw.replace(/^\[node-llama-cpp\]\s*/, '').trim();
  if (line === '' || /^at\s/.test(line)) return null; // blank, or a JS stack frame
  const levelled = LEVELLED_PREFIX.exec(line);
  if (levelled !== null) return levelled[1] === 'E' ? line.slice(levelled[0].length) : null;
  const untagged = line.replace(MODULE_TAG, '');
  // Old builds have no level; their warnings must not turn another failure into an oom. Pinned
  // host memory in particular is optional: llama.cpp falls back to a plain buffer and carries on.
  if (/\bwarning\b|falling back|pinned memory/i.test(untagged)) return null;
  return ERROR_WORDS.test(untagged) || isOutOfMemory(untagged) ? untagged : null;
}

/**
 * "llama_model_load: error loading model: x" → "error loading model: x"; "InvalidGgufMagicError: x" → "x".
 * Only C function names (lowercase start) and JS error class names are stripped: "ENOENT:" and
 * "FATAL ERROR:" carry meaning and stay.
 */
function stripFunctionPrefixes(message: string): string {
  let text = message.trim();
  for (;;) {
    const next = text.replace(/^(?:[a-z_][\w:]*(?:\(\))?|\w*Error):\s+/, '');
    if (next === text) return text;
    text = next;
  }
}

function isOutOfMemory(text: string): boolean {
  return OUT_OF_MEMORY.some((re) => re.test(text));
}

function exitWords(evidence: FailureEvidence): string {
  // Nothing asked it to stop (a stop is not a failure): an engine that ends cleanly on its own once ready will not serve.
  if (evidence.signal === null && evidence.exitCode === 0 && evidence.diedAfterReady === true) return 'it exited with code 0 on its own after it was ready, without an error line; its log has the details';
  const how = evidence.signal !== null ? `was terminated by ${evidence.signal}` : `exited with code ${evidence.exitCode ?? 'unknown'}`;
  return `it ${how} without an error line; its log has the details`;
}

function lastWords(log: readonly string[]): string {
  for (let i = log.length - 1; i >= 0; i--) {
    const line = log[i]?.trim();
    if (line) return `; its last log line was "${line}"`;
  }
  return '; it printed nothing';
}

function formatSeconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

/**
 * What supervisor.launch rejects with when a model server could not be made ready. The
 * controller reads `kind` for the recovery ladder and `reason` for the person; the message
 * says both with the model's name.
 */
export class LaunchError extends Error {
  override readonly name = 'LaunchError';
  readonly kind: LaunchFailureKind;
  readonly reason: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** The last lines of its log (stdout and stderr), for the dashboard. */
  readonly logTail: readonly string[];

  constructor(
    modelId: string,
    details: { kind: LaunchFailureKind; reason: string; exitCode: number | null; signal: string | null; logTail: readonly string[] },
  ) {
    super(`model server for '${modelId}' failed (${details.kind}): ${details.reason}`);
    this.kind = details.kind;
    this.reason = details.reason;
    this.exitCode = details.exitCode;
    this.signal = details.signal;
    this.logTail = details.logTail;
  }
}
