// A model download from the Hugging Face Hub, as every surface shows it: the CLI's progress line,
// the admin API's answers and events, the dashboard, the tray. Declared once here (the pull
// itself is core/pull/); pure types and words.

/**
 * - resolving: asking the Hub which files the name means, their sizes and sha256;
 * - downloading: bytes arriving (or about to, after a restart or a cut);
 * - verifying: every byte is here; its sha256 is being checked;
 * - done: checked, in the cache, and served under `servedAs`;
 * - failed: stopped, with `message` saying why and what to do; nothing half-written is offered;
 * - cancelled: a person stopped it; the bytes so far stay for a later pull to resume.
 */
export type PullState = 'resolving' | 'downloading' | 'verifying' | 'done' | 'failed' | 'cancelled';

export interface PullFileView {
  /** Its path inside the repo. */
  path: string;
  sizeBytes: number;
  /** The bytes on disk so far. */
  receivedBytes: number;
  /** Its sha256 as the Hub gives it (hex): Ollama's pull progress names each file by its digest. Absent while resolving. */
  sha256?: string;
}

export interface PullView {
  /** The pull's id: its name as the model will be served (`hf.co/OWNER/REPO:QUANT`), which is also how it is cancelled. */
  id: string;
  /** `OWNER/REPO`. */
  repo: string;
  state: PullState;
  /** The files it fetches: the model (every part of a split one) and its projector. Empty while resolving. */
  files: PullFileView[];
  receivedBytes: number;
  totalBytes: number;
  /** Bytes a second over the last few seconds; 0 when nothing arrives. */
  bytesPerSecond: number;
  /** Seconds left at that rate; null when it cannot be said (no rate yet, or not downloading). */
  secondsLeft: number | null;
  /** What a person should know now: why it failed and what to do, or what it is waiting on. */
  message: string;
  /** With no quant named: which one was chosen for this machine and why, with the numbers. */
  choice?: string;
  /** Once done: the name it is served under. */
  servedAs?: string;
  startedAt: number;
}

export function isFinished(pull: PullView): boolean {
  return pull.state === 'done' || pull.state === 'failed' || pull.state === 'cancelled';
}

/** A model the Hub's search found (GGUF repos only). */
export interface HubModelHit {
  /** `OWNER/REPO`. */
  repo: string;
  downloads: number;
  likes: number;
  /** Whether pulling it needs HF_TOKEN with access. */
  gated: boolean;
}

/** How a quant would run on this machine, as the daemon would place it: whole on a GPU, partly in host RAM, CPU only, too big, or not known (no budget yet, a header that cannot be read). */
export type FitKind = 'whole' | 'partial' | 'cpu' | 'too_big' | 'unknown';

/** One quant of a repo, before anything is downloaded. */
export interface QuantOffer {
  /** The quant as its file's name writes it; undefined for a name that holds none. */
  quant?: string;
  /** Its (first) file in the repo. */
  path: string;
  /** Every part together. */
  sizeBytes: number;
  parts: number;
  fit: FitKind;
  /** The fit in words with its numbers ("whole on GPU 0 at 8192 tokens (9.5 GiB)"). */
  fitWords: string;
  /** The name that pulls it. */
  pullAs: string;
}

/** A repo's quants, largest first, each with how it would run here. */
export interface RepoOffer {
  repo: string;
  quants: QuantOffer[];
  /** The vision projector pulled beside any of them, when the repo has one. */
  projector?: { path: string; sizeBytes: number };
}

/**
 * The pulls as the admin service offers them (core/admin implements the routes over this; the
 * daemon's pull manager implements it). Each method says whether it blocks.
 */
export interface PullActions {
  /**
   * Starts pulling `name` (or joins the pull of it already running) and resolves with its view
   * once the Hub has said which files it means; a name that cannot be pulled (unknown repo or
   * quant, a gate, no room on the disk) rejects with a PullRefused naming what to do.
   */
  start(name: string): Promise<PullView>;
  /** Every pull of this run, newest first. Never blocks. */
  list(): PullView[];
  /** Stops the pull with this id or name; the bytes so far stay for a later pull. Rejects with PullRefused when there is none. */
  cancel(idOrName: string): Promise<PullView>;
  /** Removes what a pull wrote (the snapshot links and the blobs no other file uses) and nothing else. Rejects with PullRefused when llmtray pulled no such model. */
  remove(idOrName: string): Promise<{ removed: string[] }>;
  /** The Hub's GGUF models whose name holds `query`, most downloaded first. Blocks on the Hub; rejects with PullRefused. */
  search(query: string): Promise<HubModelHit[]>;
  /** A repo's quants with how each would run here, before anything is downloaded. Blocks on the Hub (one header read); rejects with PullRefused. */
  offer(repo: string): Promise<RepoOffer>;
}

/**
 * A pull refused for a reason a person can act on; `status` is the admin API's HTTP status for it.
 * Never 401: on the admin API that says "llmtray's own token was refused", and the dashboard asks
 * the person to open it again; a gated repo is 403.
 */
export class PullRefused extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 409 | 502 | 507,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'PullRefused';
  }
}
