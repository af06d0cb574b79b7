// The daemon's pulls: one owner of every download, so the CLI, the dashboard, the tray and
// Ollama's `/api/pull` show the same one and can cancel it.
//
//   start(name) ─► parse ─► the Hub: repo id, files, each file's metadata ─► room checked
//        │           (refused here, before a byte, with a sentence: PullRefused)
//        ▼
//   recorded in pulls.json ─► each blob fetched (resumed, checked; a cut retried with Range)
//        ─► snapshot links, refs/main ─► the catalog lists it ─► done, served under its id
//
// A pull's id is the name it will be served under (`hf.co/OWNER/REPO:QUANT`): a second start of
// the same model joins the running pull instead of fetching the bytes twice, and a pull of
// another name that needs the same blob waits for the one fetching it. A daemon killed mid-pull
// finds its record still 'pulling' when it starts again and continues from the `.incomplete`.
import { rm } from 'node:fs/promises';
import { sep } from 'node:path';
import type { Clock } from '../common/clock.js';
import { Emitter, type Event } from '../common/emitter.js';
import { createThrottle, type Throttle } from '../common/throttle.js';
import { errorMessage } from '../contracts/error-message.js';
import { formatBytes } from '../contracts/format-bytes.js';
import { hubAlias, parseHubModelName } from '../contracts/hub/names.js';
import { isFinished, PullRefused, type HubModelHit, type PullActions, type PullView, type RepoOffer } from '../contracts/hub/pulls.js';
import type { PlatformFacts } from '../catalog/paths.js';
import { bytesOnDisk, downloadBlob } from './blob-download.js';
import { chooseFiles, modelChoices, type ChosenFiles } from './choose-files.js';
import { repoEstimate, repoOffer, searchHub } from './hub-browse.js';
import { chooseByFit, type MachineRoom } from './quant-fit.js';
import { checkRoom } from './free-space.js';
import { readHubAccess, type HubAccess } from './hub-access.js';
import { fileMetadata, repoFiles, repoId, type FileMetadata, type RepoFile } from './hub-api.js';
import { linkSnapshot, removeLinked, repoCache, writeMainRef, type RepoCache } from './hf-cache.js';
import { PullRecords, type PulledFile, type PullRecord } from './pull-records.js';

export interface PullManagerOptions {
  dataDir: string;
  /** The environment the Hub's variables are read from (HF_ENDPOINT, HF_TOKEN, HF_HOME, HF_HUB_CACHE). */
  facts: PlatformFacts;
  clock: Clock;
  /** The model dirs the catalog scans now: a cache outside them would never be served, so the pull is refused. */
  modelDirs: () => readonly string[];
  /** Rescans the models until `name` is listed (or it is clear it will not be); resolves whether it is served. */
  whenServed: (name: string) => Promise<boolean>;
  /** Rescans the models after a delete. */
  reloadModels: () => Promise<void>;
  warn: (message: string) => void;
  /**
   * What this machine offers a model now (the daemon's live budget): with no quant named, the pull
   * takes the largest that runs here (quant-fit.ts). Absent or null: the Hub's default (Q4_K_M).
   */
  machineRoom?: () => MachineRoom | null;
  /** Waits before each retry of a cut download, ms; default 1 s, 2 s, 4 s. */
  retryDelaysMs?: readonly number[];
}

/** How often progress is told, at most (the issue's "at most once a second"). */
export const PROGRESS_INTERVAL_MS = 1000;
/** The window the rate is measured over. */
const RATE_WINDOW_MS = 5000;
const DEFAULT_RETRY_DELAYS_MS = [1000, 2000, 4000];

interface Running {
  view: PullView;
  abort: AbortController;
  finished: Promise<PullView>;
  throttle: Throttle;
  samples: { at: number; bytes: number }[];
}

interface PlannedFile extends FileMetadata {
  path: string;
  cache: RepoCache;
}

export class PullManager implements PullActions {
  private readonly pulls = new Map<string, Running>();
  /** The blob each running pull is fetching now, by sha256: a second pull of it waits for the first. */
  private readonly blobs = new Map<string, Promise<unknown>>();
  /** The starts still asking the Hub, by id: a start of the same model meanwhile waits for this one. */
  private readonly preparing = new Map<string, Promise<PullView>>();
  private readonly changes = new Emitter<PullView>('the pulls');
  private closed = false;

  /** Fires with a pull's view when its state changes, and with its progress at most once a second. */
  readonly onDidChange: Event<PullView> = this.changes.event;

  private constructor(
    private readonly options: PullManagerOptions,
    private readonly records: PullRecords,
  ) {}

  /** Opens the records and continues every pull a stopped daemon left unfinished (in the background). Never rejects for a bad record file. */
  static async open(options: PullManagerOptions): Promise<PullManager> {
    const manager = new PullManager(options, await PullRecords.open(options.dataDir));
    // By its id, the exact quant it was fetching: a name without one could choose another quant now (the machine's room changed).
    for (const record of manager.records.all().filter((r) => r.state === 'pulling')) {
      manager.start(record.id).catch((error: unknown) => options.warn(`the pull of ${record.id} left unfinished could not continue: ${errorMessage(error)}`));
    }
    return manager;
  }

  async start(name: string): Promise<PullView> {
    if (this.closed) throw new PullRefused(409, 'stopping', 'llmtray is stopping; pull again once it runs.');
    const parsed = parseHubModelName(name);
    if (!parsed.ok) throw new PullRefused(400, 'invalid_name', parsed.message);
    const access = await readHubAccess(this.options.facts);
    this.checkServable(access);
    const repo = await repoId(access, parsed.name.repo);
    const files = await repoFiles(access, repo);
    const fit = parsed.name.select.kind === 'default' ? await this.fitHere(access, repo, files) : undefined;
    const chosen = chooseFiles(repo, files, fit === undefined ? parsed.name.select : { kind: 'file', path: fit.path });
    const id = hubAlias(repo, chosen.quant);
    const key = id.toLowerCase();
    const running = this.pulls.get(key);
    if (running && !isFinished(running.view)) return { ...running.view };
    // A second start while the first still asks the Hub about each file joins it too, rather than racing it to a second pull.
    const preparing = this.preparing.get(key);
    if (preparing) return preparing;
    const prepared = this.prepare(id, name, repo, chosen, access, fit?.why);
    this.preparing.set(key, prepared);
    try {
      return await prepared;
    } finally {
      this.preparing.delete(key);
    }
  }

  /** Asks the Hub for each file's metadata, checks the room, records the pull and starts it. Rejects with PullRefused. */
  private async prepare(id: string, name: string, repo: string, chosen: ChosenFiles, access: HubAccess, choice: string | undefined): Promise<PullView> {
    const cache = repoCache(access.cacheDir, repo);
    const wanted = [...chosen.model, ...(chosen.projector ? [chosen.projector] : [])];
    const planned: PlannedFile[] = [];
    for (const file of wanted) {
      const metadata = await fileMetadata(access, repo, file.path);
      if (file.sha256 !== undefined && file.sha256 !== metadata.sha256) {
        throw new PullRefused(502, 'hub_answer', `The Hub at ${access.endpoint} gives ${repo}/${file.path} two sha256s (${file.sha256} in its file list, ${metadata.sha256} from resolve); pull again in a moment, when its copies agree.`);
      }
      planned.push({ ...metadata, path: file.path, cache });
    }
    const onDisk = await Promise.all(planned.map((f) => bytesOnDisk(cache, f.sha256)));
    const missing = planned.reduce((sum, f, i) => sum + (onDisk[i]!.whole ? 0 : f.sizeBytes - Math.min(onDisk[i]!.bytes, f.sizeBytes)), 0);
    await checkRoom(`${cache.dir}${sep}blobs`, missing, `hf.co/${repo}${chosen.quant ? `:${chosen.quant}` : ''} (${formatBytes(planned.reduce((s, f) => s + f.sizeBytes, 0))})`);
    const previous = this.records.get(id);
    await this.records.put({
      id,
      name,
      repo,
      state: 'pulling',
      files: planned.map((f, i) => ({
        path: f.path,
        sha256: f.sha256,
        sizeBytes: f.sizeBytes,
        link: cache.snapshotPath(f.commit, f.path),
        // A blob that was whole before this pull (and before an earlier run of it) is not ours to delete.
        ownBlob: !onDisk[i]!.whole || (previous?.files.find((p) => p.sha256 === f.sha256)?.ownBlob ?? false),
      })),
    });

    const view: PullView = {
      id,
      repo,
      state: 'downloading',
      files: planned.map((f, i) => ({ path: f.path, sizeBytes: f.sizeBytes, receivedBytes: Math.min(onDisk[i]!.bytes, f.sizeBytes), sha256: f.sha256 })),
      receivedBytes: 0,
      totalBytes: planned.reduce((s, f) => s + f.sizeBytes, 0),
      bytesPerSecond: 0,
      secondsLeft: null,
      message: `downloading ${planned.map((f) => f.path).join(', ')} from ${access.endpoint}`,
      ...(choice === undefined ? {} : { choice }),
      startedAt: this.options.clock.now(),
    };
    view.receivedBytes = view.files.reduce((s, f) => s + f.receivedBytes, 0);
    const pull: Running = {
      view,
      abort: new AbortController(),
      finished: Promise.resolve(view),
      throttle: createThrottle(() => this.changes.fire({ ...view }), PROGRESS_INTERVAL_MS, this.options.clock),
      samples: [],
    };
    this.pulls.set(id.toLowerCase(), pull);
    pull.finished = this.run(pull, planned, access);
    this.changes.fire({ ...view });
    return { ...view };
  }

  /**
   * With no quant named and several in the repo: the one that runs best here and why, costed from
   * one header read off the Hub (remote-gguf.ts). Undefined when there is nothing to choose, or no
   * machine to choose for (then the Hub's default applies). Rejects with PullRefused.
   */
  private async fitHere(access: HubAccess, repo: string, files: readonly RepoFile[]): Promise<{ path: string; why: string } | undefined> {
    const choices = modelChoices(files);
    const room = this.options.machineRoom?.() ?? null;
    if (choices.length < 2 || room === null) return undefined;
    const base = await repoEstimate(access, repo, files);
    const choice = chooseByFit(choices, base.estimate, base.index, room);
    return { path: choices[choice.index]!.path, why: choice.why };
  }

  async search(query: string): Promise<HubModelHit[]> {
    return searchHub(await readHubAccess(this.options.facts), query);
  }

  async offer(repo: string): Promise<RepoOffer> {
    return repoOffer(await readHubAccess(this.options.facts), repo, this.options.machineRoom?.() ?? null);
  }

  /** The view once the pull with this id ends (done, failed or cancelled), for a caller that follows one (Ollama's `/api/pull`). */
  finished(id: string): Promise<PullView> | undefined {
    return this.pulls.get(id.toLowerCase())?.finished;
  }

  list(): PullView[] {
    return [...this.pulls.values()].map((p) => ({ ...p.view })).sort((a, b) => b.startedAt - a.startedAt);
  }

  async cancel(idOrName: string): Promise<PullView> {
    const pull = this.find(idOrName);
    if (pull === undefined || isFinished(pull.view)) {
      const active = this.list().filter((p) => !isFinished(p)).map((p) => p.id);
      throw new PullRefused(404, 'no_such_pull', `No pull of ${idOrName} is running; ${active.length === 0 ? 'none is' : `the running ones are ${active.join(', ')}`}.`);
    }
    pull.abort.abort(new PullCancelled());
    return pull.finished;
  }

  async remove(idOrName: string): Promise<{ removed: string[] }> {
    const pull = this.find(idOrName);
    const record = this.records.get(pull?.view.id ?? idOrName) ?? this.recordFor(idOrName);
    if (record === undefined) {
      const pulled = this.records.all().map((r) => r.id);
      throw new PullRefused(404, 'not_pulled', `llmtray pulled no model ${idOrName}, and removes only what it pulled; ${pulled.length === 0 ? 'it has pulled none' : `it pulled ${pulled.join(', ')}`}.`);
    }
    if (pull !== undefined && !isFinished(pull.view)) {
      pull.abort.abort(new PullCancelled());
      await pull.finished;
    }
    const access = await readHubAccess(this.options.facts);
    const cache = repoCache(access.cacheDir, record.repo);
    const removed: string[] = [];
    for (const file of record.files) {
      removed.push(...(await removeLinked(cache, file.link, file.sha256, file.ownBlob)));
      if (file.ownBlob) await rm(cache.incompletePath(file.sha256), { force: true });
    }
    await this.records.remove(record.id);
    this.pulls.delete(record.id.toLowerCase());
    await this.options.reloadModels();
    return { removed };
  }

  /** Stops every pull (their bytes stay for the next start) and waits for them. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const running = [...this.pulls.values()].filter((p) => !isFinished(p.view));
    for (const pull of running) pull.abort.abort(new PullStopped());
    await Promise.all(running.map((p) => p.finished));
    for (const pull of this.pulls.values()) pull.throttle.cancel();
  }

  /** The pull a person means: by its id or the name it was started with, with or without `hf.co/`, in any case. */
  private find(idOrName: string): Running | undefined {
    const id = this.recordFor(idOrName)?.id ?? idOrName;
    return this.pulls.get(id.toLowerCase()) ?? this.pulls.get(withHost(idOrName).toLowerCase());
  }

  private recordFor(idOrName: string): PullRecord | undefined {
    const names = new Set([idOrName.toLowerCase(), withHost(idOrName).toLowerCase()]);
    return this.records.all().find((r) => names.has(r.id.toLowerCase()) || names.has(r.name.toLowerCase()) || names.has(withHost(r.name).toLowerCase()));
  }

  /** A pull into a cache the catalog does not scan would finish and never be served: refused first. */
  private checkServable(access: HubAccess): void {
    const dirs = this.options.modelDirs();
    if (dirs.some((dir) => access.cacheDir === dir || access.cacheDir.startsWith(dir.endsWith(sep) ? dir : `${dir}${sep}`))) return;
    throw new PullRefused(
      409,
      'cache_not_scanned',
      `Pulled models go to the Hugging Face cache ${access.cacheDir}, which is not among the folders llmtray looks for models in (${dirs.join(', ') || 'none'}); add it to modelDirs in the config (or set HF_HUB_CACHE to one of them) and pull again.`,
    );
  }

  private async run(pull: Running, planned: readonly PlannedFile[], access: HubAccess): Promise<PullView> {
    const { view } = pull;
    try {
      for (const [index, file] of planned.entries()) {
        const before = view.files.slice(0, index).reduce((s, f) => s + f.sizeBytes, 0);
        await this.fetchBlob(pull, file, access, (received) => {
          view.files[index]!.receivedBytes = received;
          this.progressed(pull, before + received);
        });
        if (index < planned.length - 1) this.settle(pull, { state: 'downloading', message: `downloading ${planned[index + 1]!.path}` });
      }
      for (const file of planned) await linkSnapshot(file.cache, file.commit, file.path, file.sha256);
      await writeMainRef(planned[0]!.cache, planned[0]!.commit);
      const record = this.records.get(view.id);
      if (record) await this.records.put({ ...record, state: 'done' });
      this.settle(pull, { state: 'verifying', message: 'checked; waiting for llmtray to list it' });
      const served = await this.options.whenServed(view.id);
      this.settle(pull, {
        state: 'done',
        message: served ? `pulled; served as ${view.id}` : `pulled into ${planned[0]!.cache.dir}, but llmtray does not list it; see \`llmtray status\` for why`,
        ...(served ? { servedAs: view.id } : {}),
      });
    } catch (error) {
      const reason = pull.abort.signal.reason as unknown;
      // Only a pull the daemon's stop cut short continues at the next start; one a person cancelled, or that failed, waits for them.
      if (!(reason instanceof PullStopped)) await this.markStopped(view.id);
      if (reason instanceof PullCancelled) this.settle(pull, { state: 'cancelled', message: `cancelled after ${formatBytes(view.receivedBytes)} of ${formatBytes(view.totalBytes)}; pull again to resume` });
      else if (reason instanceof PullStopped) this.settle(pull, { state: 'cancelled', message: 'llmtray stopped; the pull continues when it starts again' });
      else this.settle(pull, { state: 'failed', message: errorMessage(error) });
    }
    return { ...view };
  }

  /** One blob, with a cut download retried from where it stopped; a pull of the same blob already running is waited for. */
  private async fetchBlob(pull: Running, file: PlannedFile, access: HubAccess, onBytes: (received: number) => void): Promise<void> {
    const delays = this.options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    for (let attempt = 0; ; attempt++) {
      const other = this.blobs.get(file.sha256);
      if (other !== undefined) {
        pull.view.message = `waiting for another pull that fetches ${file.path}`;
        await other.catch(() => undefined);
        continue;
      }
      const download = downloadBlob({ cache: file.cache, metadata: file, path: file.path, access, signal: pull.abort.signal, onBytes, onVerifying: () => this.settle(pull, { state: 'verifying', message: `checking ${file.path}'s sha256` }) });
      this.blobs.set(file.sha256, download);
      try {
        await download;
        return;
      } catch (error) {
        const retryable = error instanceof PullRefused && (error.code === 'download_cut' || error.code === 'download_failed');
        if (!retryable || attempt >= delays.length || pull.abort.signal.aborted) throw error;
        pull.view.message = `${error.message.split(';')[0]}; resuming`;
        this.options.warn(`the pull of ${pull.view.id}: ${error.message}; retrying with a Range request`);
        await this.wait(delays[attempt]!, pull.abort.signal);
      } finally {
        this.blobs.delete(file.sha256);
      }
    }
  }

  private async markStopped(id: string): Promise<void> {
    const record = this.records.get(id);
    if (record?.state === 'pulling') await this.records.put({ ...record, state: 'stopped' }).catch((error: unknown) => this.options.warn(`cannot write ${id}'s pull record: ${errorMessage(error)}`));
  }

  private progressed(pull: Running, received: number): void {
    const now = this.options.clock.elapsed();
    pull.view.receivedBytes = received;
    pull.samples.push({ at: now, bytes: received });
    while (pull.samples.length > 2 && pull.samples[0]!.at < now - RATE_WINDOW_MS) pull.samples.shift();
    const first = pull.samples[0]!;
    const seconds = (now - first.at) / 1000;
    pull.view.bytesPerSecond = seconds > 0 ? Math.max(0, (received - first.bytes) / seconds) : 0;
    pull.view.secondsLeft = pull.view.bytesPerSecond > 0 ? Math.ceil((pull.view.totalBytes - received) / pull.view.bytesPerSecond) : null;
    pull.throttle.request();
  }

  /** A change of state: told at once, not at the next progress tick. */
  private settle(pull: Running, change: Partial<PullView>): void {
    Object.assign(pull.view, change);
    if (change.state !== 'downloading') {
      pull.view.bytesPerSecond = 0;
      pull.view.secondsLeft = null;
    }
    pull.throttle.cancel();
    this.changes.fire({ ...pull.view });
  }

  private wait(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((done, fail) => {
      const timer = this.options.clock.setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        done();
      }, ms);
      const onAbort = (): void => {
        this.options.clock.clearTimeout(timer);
        fail(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** `OWNER/REPO:QUANT` as `hf.co/OWNER/REPO:QUANT`, the form ids are in. */
function withHost(name: string): string {
  const trimmed = name.trim().replace(/^(?:https?:\/\/)?(?:hf\.co|huggingface\.co)\//i, '');
  return `hf.co/${trimmed}`;
}

/** A person cancelled the pull. */
class PullCancelled extends Error {
  constructor() {
    super('the pull was cancelled');
  }
}

/** The daemon is stopping; the pull continues at its next start. */
class PullStopped extends Error {
  constructor() {
    super('llmtray is stopping');
  }
}

export type { PulledFile };
