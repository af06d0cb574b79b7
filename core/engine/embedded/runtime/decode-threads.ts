// How many threads each decode batch runs on: measured, not assumed.
//
// Why: node-llama-cpp's prebuilt CPU backend is built without OpenMP, so ggml runs a graph on
// its own thread pool, whose barrier between two graph nodes is a pure spin. When the machine
// has fewer free cores than the engine has threads (other processes, or -t equal to the core
// count with Node's own threads beside it), a spinning thread waits out whole scheduler slices
// for a descheduled partner at every one of a graph's few hundred nodes: a one-token step of
// demo-chat took ~200–500 ms on 2 threads against ~5 ms on 1, and a 1,500-token prompt went
// half as fast (a 2-core machine at load 6–11; BENCHMARKS.md §12). llama-server, built with
// OpenMP, backs off instead. A quiet machine with a big model runs much faster on all its
// threads, so neither "always 1" nor "always -t" is right: every batch runs on whichever of 1
// thread and -t threads has been faster lately for batches of its size, the other re-tried now
// and then, less often each time it loses (so a losing try costs little on average).
//
// Prompt batches try one thread only on a sign of contention (issue 41): a try of a 512-token
// batch on one thread costs a whole batch at half speed, and the engine's chooser starts afresh
// with every load, so on a quiet machine every model's first long prompt paid a third more (one
// of a 1,500-token prompt's three batches). The signs: a generation step's chooser has gone to
// one thread, or this size's last batch on -t took 30 % longer per token than its best.
import type { LlamaContext } from 'node-llama-cpp';

/** The native context's calls this wraps (node-llama-cpp 3.21.1's AddonContext, internal). */
interface NativeContext {
  initBatch(size: number): void;
  setThreads(threads: number): void;
  decodeBatch(): Promise<void>;
}

/** Weight of the newest measurement in a candidate's running mean. */
const NEW_WEIGHT = 0.25;
/** Batches between two tries of the losing candidate: starts here, doubles per confirmation. */
const FIRST_RETRY = 8;
const LAST_RETRY = 1024;

/**
 * Chooses between two thread counts for one size class of batches by their measured time per
 * token. Pure bookkeeping (no clock of its own), so tests can drive it with any timings.
 */
/** How much slower per token than its best a batch on -t must be to count as a sign of contention. */
const CONTENDED = 1.3;

export class ThreadChooser {
  /** Running mean of ms per token, per candidate; undefined until measured. */
  private readonly meanMs: [number | undefined, number | undefined] = [undefined, undefined];
  /** The best and the latest single measurement of -t, for the sign of contention. */
  private bestTMs: number | undefined;
  private lastTMs: number | undefined;
  private current = 0;
  private sinceRetry = 0;
  private retryEvery = FIRST_RETRY;

  /**
   * `threads` is the engine's -t; its alternative is 1. `mayTryOne` says whether one thread
   * may be tried while -t is chosen and has shown no sign of contention itself (always, unless
   * given: a prompt batch's chooser asks the generation steps' choosers).
   */
  constructor(private readonly threads: number, private readonly mayTryOne: () => boolean = () => true) {}

  /** Whether this chooser runs its batches on one thread now. */
  get onOneThread(): boolean {
    return this.threads > 1 && this.current === 1;
  }

  /** The candidates: index 0 is -t, index 1 is a single thread. */
  private candidate(i: number): number {
    return i === 0 ? this.threads : 1;
  }

  /** The thread count for the next batch. */
  next(): number {
    if (this.threads <= 1) return 1;
    const other = 1 - this.current;
    // The first two batches measure both; later the loser is re-tried now and then.
    if (this.meanMs[this.current] === undefined) return this.candidate(this.current);
    const due = this.meanMs[other] === undefined || this.sinceRetry >= this.retryEvery;
    // On one thread, -t is always re-tried when due: that is how a load going away is found.
    if (due && (this.current === 1 || this.mayTryOne() || this.contended())) return this.candidate(other);
    return this.candidate(this.current);
  }

  /** -t's latest batch per token against its best: a machine that got busier. */
  private contended(): boolean {
    return this.lastTMs !== undefined && this.bestTMs !== undefined && this.lastTMs > CONTENDED * this.bestTMs;
  }

  /** Records that a batch ran on `threads` threads at `ms` per token. */
  record(threads: number, ms: number): void {
    if (this.threads <= 1) return;
    const i = threads === this.threads ? 0 : 1;
    if (i === 0) {
      this.lastTMs = ms;
      this.bestTMs = Math.min(this.bestTMs ?? ms, ms);
    }
    if (i === this.current) {
      const mean = this.meanMs[i];
      this.meanMs[i] = mean === undefined ? ms : mean + NEW_WEIGHT * (ms - mean);
      this.sinceRetry++;
      return;
    }
    // A try of the other candidate: its old mean is stale (the load changes), so the try
    // alone stands for it. Switch if it is now faster, else wait longer for the next try.
    this.meanMs[i] = ms;
    this.sinceRetry = 0;
    const [a, b] = [this.meanMs[this.current], this.meanMs[i]];
    if (a !== undefined && b !== undefined && b < a) {
      this.current = i;
      this.retryEvery = FIRST_RETRY;
    } else if (a !== undefined) {
      this.retryEvery = Math.min(LAST_RETRY, this.retryEvery * 2);
    }
  }
}

/** Batches of up to this many tokens (generation steps of all slots) are told apart by their exact size. */
const EXACT_SIZES = 16;

/** The size class a batch is measured in: exact for generation steps, a power of two for prompt batches. */
export function sizeClassOf(tokens: number): number {
  return tokens <= EXACT_SIZES ? tokens : 2 ** Math.ceil(Math.log2(tokens));
}

/**
 * Makes every batch of `context` run on the thread count the ThreadChooser of its size class
 * picks, timed per token. Hooks node-llama-cpp's native context (internal in 3.21.1, pinned in
 * package.json): the only point where a batch's size and its decode meet. Throws at load when
 * that shape is gone, so an upgrade fails loudly instead of silently slow.
 */
export function chooseDecodeThreads(context: LlamaContext, threads: number): void {
  const native = (context as unknown as { _ctx?: Partial<NativeContext> })._ctx;
  if (native === undefined || typeof native.initBatch !== 'function' || typeof native.setThreads !== 'function' || typeof native.decodeBatch !== 'function') {
    throw new Error('node-llama-cpp\'s context has no initBatch/setThreads/decodeBatch: decode-threads.ts needs updating for this version');
  }
  const initBatch = native.initBatch.bind(native);
  const setThreads = native.setThreads.bind(native);
  const decodeBatch = native.decodeBatch.bind(native);
  const choosers = new Map<number, ThreadChooser>();
  let batchSize = 0;
  // node-llama-cpp's thread splitter may give a context fewer threads while another (a
  // draft's) decodes; that share stays the ceiling.
  let allotted = threads;
  // The binding's methods are read-only on its prototype: plain assignment throws.
  const replace = <K extends keyof NativeContext>(name: K, fn: NativeContext[K]): void => {
    Object.defineProperty(native, name, { value: fn, configurable: true, writable: true });
  };
  replace('initBatch', (size: number) => { batchSize = size; initBatch(size); });
  replace('setThreads', (n: number) => { allotted = n; setThreads(n); });
  replace('decodeBatch', async () => {
    const size = batchSize;
    const sizeClass = sizeClassOf(size);
    let chooser = choosers.get(sizeClass);
    if (chooser === undefined) {
      // A prompt batch tries one thread only once a generation step's chooser has gone there (or its own -t slows down).
      const mayTryOne = sizeClass > EXACT_SIZES ? () => [...choosers].some(([size, c]) => size <= EXACT_SIZES && c.onOneThread) : undefined;
      choosers.set(sizeClass, chooser = new ThreadChooser(threads, mayTryOne));
    }
    const wanted = chooser.next();
    const use = Math.min(allotted, wanted);
    setThreads(use);
    const started = performance.now();
    await decodeBatch();
    // A batch cut short by the splitter measured neither candidate.
    if (use === wanted) chooser.record(use, (performance.now() - started) / Math.max(1, size));
  });
}
