// The fault injector: one episode per fault, each caused for real — a signal to a real engine
// process, a launch past a real address-space limit, a real corrupt file, a real client that
// hangs up, a real `kill -9` of the daemon — and each followed until the daemon has said what
// it was (the recovery ladder's kind in its log) and the model is back. An episode returns the
// fault's record: when and where it struck, the window its effects may show in, and what the
// daemon classified it as.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isProcessAlive, enginesUsing, eventually, type DaemonProcess } from '../support/daemon-process.js';
import type { DaemonLogRecorder, LogEvent } from './daemon-log.js';
import type { FaultRecord } from './explain.js';
import type { FaultKind } from './profiles.js';
import type { ChatRequest, Outcome } from './request-outcome.js';
import { MODELS, type SoakSetup } from './soak-config.js';

export interface FaultWorld {
  readonly setup: SoakSetup;
  /** Everything the run writes lives under it; every engine's argv names a file under it. */
  readonly workDir: string;
  readonly log: DaemonLogRecorder;
  /** The daemon alive now. */
  daemon(): DaemonProcess;
  /** Sends one request on behalf of fault episode `faultId` and records its outcome. */
  send(origin: string, faultId: number, request: ChatRequest): Promise<Outcome>;
  /** An admin unload of the model if it has a server, waiting until it has none; not counted as a swap. */
  unload(modelId: string): Promise<void>;
  /** Starts a daemon on the same data dir, port and limit as the one that was killed, and follows it. */
  restartDaemon(): Promise<DaemonProcess>;
}

const LONG = { maxTokens: 2000, prompt: 'Write a long story about a lighthouse.' };
/** How long the slow model's load is held up (SIGSTOP … SIGCONT) on top of its own slowness. */
export const SLOW_LOAD_FREEZE_MS = 3_000;
/** How long a fault's effects may still reach a client after the daemon classified it: a resent request, a claim's release. */
const AFTERMATH_MS = 5_000;
/** Bounds for what the daemon does on its own; each only turns a stuck episode into a failed one. */
const CLASSIFY_TIMEOUT_MS = 30_000;
const RECOVER_TIMEOUT_MS = 90_000;

type Episode = (world: FaultWorld, id: number, round: number) => Promise<FaultRecord>;

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
const isFailureOf = (modelId: string) => (e: LogEvent) => e.type === 'failure' && e.modelId === modelId;

/** The engine pid that serves `modelId` now, or null. */
async function servingPid(world: FaultWorld, modelId: string): Promise<number | null> {
  return (await world.daemon().model(modelId)).upstream?.pid ?? null;
}

/** Waits until `pid` has ended; false after `timeoutMs`. */
async function ended(pid: number, timeoutMs: number): Promise<boolean> {
  return eventually(`pid ${pid} ends`, async () => (isProcessAlive(pid) ? undefined : true), timeoutMs, 50).catch(() => false);
}

/**
 * A streamed request whose engine gets `signal` once the first content chunk has arrived: the
 * engine is then provably answering this very request (its claim keeps the server in place).
 */
async function strikeMidStream(world: FaultWorld, id: number, origin: string, modelId: string, signal: NodeJS.Signals) {
  let struck: Promise<{ pid: number; at: number } | null> | null = null;
  const outcome = await world.send(origin, id, {
    model: modelId,
    stream: true,
    ...LONG,
    onChunk: (count) => {
      if (count !== 1) return;
      struck = servingPid(world, modelId).then((pid) => {
        if (pid === null) return null;
        process.kill(pid, signal);
        return { pid, at: Date.now() };
      });
    },
  });
  return { outcome, victim: struck === null ? null : await (struck as Promise<{ pid: number; at: number } | null>) };
}

/** The failure the daemon logged for `modelId` after `since`, classified. */
async function classification(world: FaultWorld, modelId: string, since: number) {
  const logged = await world.log.waitFor(since, isFailureOf(modelId), CLASSIFY_TIMEOUT_MS);
  return logged !== null && logged.event.type === 'failure' ? { at: logged.at, kind: logged.event.kind, what: logged.event.what } : null;
}

const crash: Episode = async (world, id, round) => {
  const origin = `crash #${round}`;
  const { outcome, victim } = await strikeMidStream(world, id, origin, MODELS.chatB, 'SIGKILL');
  const record = base(id, 'crash', MODELS.chatB, 'crash');
  if (victim === null) return { ...record, at: outcome.startedAt, until: outcome.endedAt, note: 'no engine served the stream when it was to be killed' };
  const seenAs = await classification(world, MODELS.chatB, victim.at);
  const streamEnded = outcome.error?.class === 'stream-event' && outcome.error.code === 'engine_stream_interrupted';
  return {
    ...record,
    at: victim.at,
    until: (seenAs?.at ?? victim.at + CLASSIFY_TIMEOUT_MS) + AFTERMATH_MS,
    classifiedAs: seenAs?.kind ?? null,
    seen: seenAs !== null && streamEnded,
    note: `SIGKILL pid ${victim.pid} after the first chunk; the stream ${streamEnded ? 'ended with the error event engine_stream_interrupted' : `ended ${outcome.ok ? 'normally' : `with ${outcome.error?.class} ${outcome.error?.code ?? outcome.error?.message}`}`}; the daemon logged ${seenAs === null ? 'no failure' : `"${seenAs.what}" (${seenAs.kind})`}`,
  };
};

const hang: Episode = async (world, id, round) => {
  const origin = `hang #${round}`;
  const record = base(id, 'hang', MODELS.chatA, 'hang');
  let victim: { pid: number; at: number } | null;
  let outcome: Outcome;
  if (round % 2 === 1) {
    ({ outcome, victim } = await strikeMidStream(world, id, origin, MODELS.chatA, 'SIGSTOP'));
  } else {
    // Not streamed: no byte comes before the end, so freeze the engine once it holds a request.
    const request = world.send(origin, id, { model: MODELS.chatA, stream: false, ...LONG });
    const pid = await eventually('chat-a answers a request', async () => {
      const model = await world.daemon().model(MODELS.chatA);
      return model.inFlight > 0 && model.upstream !== null ? model.upstream.pid : undefined;
    }, RECOVER_TIMEOUT_MS, 20).catch(() => null);
    victim = pid === null ? null : { pid, at: Date.now() };
    if (pid !== null) process.kill(pid, 'SIGSTOP');
    outcome = await request;
  }
  if (victim === null) return { ...record, at: outcome.startedAt, until: outcome.endedAt, note: 'no engine served the request when it was to be frozen' };
  const seenAs = await classification(world, MODELS.chatA, victim.at);
  const killed = await ended(victim.pid, 20_000);
  if (!killed) process.kill(victim.pid, 'SIGKILL'); // the daemon left it stopped: a leak, reported below; do not leave it behind us
  const answered = outcome.error?.code === 'engine_hung' ? `got engine_hung (${outcome.error.class})` : outcome.ok ? 'was answered (it reached a fresh engine)' : `failed with ${outcome.error?.class} ${outcome.error?.code ?? ''}`;
  return {
    ...record,
    at: victim.at,
    until: (seenAs?.at ?? victim.at + CLASSIFY_TIMEOUT_MS) + AFTERMATH_MS,
    classifiedAs: seenAs?.kind ?? null,
    seen: seenAs !== null && killed,
    note: `SIGSTOP pid ${victim.pid} ${outcome.stream ? 'after the first chunk' : 'while it answered'}; the soak's ${outcome.stream ? 'stream' : 'request'} ${answered}; the stopped process was ${killed ? 'killed by the daemon' : 'NOT ended by the daemon'}`,
  };
};

const oom: Episode = async (world, id, round) => {
  await world.unload(MODELS.big);
  const at = Date.now();
  const outcome = await world.send(`oom #${round}`, id, { model: MODELS.big, stream: false, maxTokens: 8, prompt: 'hello' });
  const seenAs = await classification(world, MODELS.big, at);
  const ready = world.log.after(at, 'ready', MODELS.big).at(0);
  await world.unload(MODELS.big); // so that its idle time does not keep it wanted, relaunching it (and failing) on its own
  return {
    ...base(id, 'oom', MODELS.big, 'oom'),
    at,
    until: (ready?.at ?? outcome.endedAt) + AFTERMATH_MS,
    classifiedAs: seenAs?.kind ?? null,
    seen: seenAs?.kind === 'oom' && ready?.event.level === 'smaller-context' && outcome.ok,
    note: `${seenAs === null ? 'no failed launch' : `launch at ${seenAs.what === 'failed to launch' ? 'full failed' : seenAs.what} (${seenAs.kind})`}; ${ready === undefined ? 'never ready' : `ready at the ${ready.event.level} level`}; its request ${outcome.ok ? 'was answered' : `failed: ${outcome.error?.message}`}`,
  };
};

const invalid: Episode = async (world, id, round) => {
  const at = Date.now();
  // A person's retry lifts the quarantine; the next request finds the file still corrupt.
  const retry = await world.daemon().api(`/api/models/${MODELS.broken}/retry`, { method: 'POST' });
  const outcome = await world.send(`invalid #${round}`, id, { model: MODELS.broken, stream: false, maxTokens: 8, prompt: 'hello' });
  const seenAs = await classification(world, MODELS.broken, at);
  const refused = outcome.error?.status === 503 && outcome.error.code === 'model_quarantined';
  return {
    ...base(id, 'invalid', MODELS.broken, 'invalid'),
    at,
    until: outcome.endedAt,
    classifiedAs: seenAs?.kind ?? null,
    seen: retry.ok && seenAs?.kind === 'invalid' && seenAs.what === 'quarantined' && refused,
    note: `retry answered ${retry.status}; ${seenAs === null ? 'no failure logged' : `${seenAs.what} (${seenAs.kind})`}; the request ${refused ? 'got 503 model_quarantined' : `got ${outcome.ok ? 'an answer' : `${outcome.error?.class} ${outcome.error?.code ?? outcome.error?.message}`}`}`,
  };
};

/**
 * The engine process loading `modelId` (whose file is `modelPath`) now: the one whose command line
 * names the file, or else the one the daemon's engines.json records under the model's id. A launch
 * that adopted a warm spare runs in a process started with no model, whose command line names
 * none; the snapshot names a server's pid only once it is ready.
 */
async function loadingEngineOf(world: FaultWorld, modelId: string, modelPath: string): Promise<number | undefined> {
  const byCommandLine = (await enginesUsing(modelPath))[0];
  if (byCommandLine !== undefined) return byCommandLine.pid;
  const recorded = await readFile(join(world.daemon().dataDir, 'engines.json'), 'utf8').then(
    (text) => (JSON.parse(text) as { engines?: { modelId: string; pid: number }[] }).engines ?? [],
    () => [],
  );
  return recorded.find((engine) => engine.modelId === modelId && isProcessAlive(engine.pid))?.pid;
}

const slowLoad: Episode = async (world, id, round) => {
  await world.unload(MODELS.slow);
  const at = Date.now();
  const request = world.send(`slow-load #${round}`, id, { model: MODELS.slow, stream: false, maxTokens: 8, prompt: 'hello' });
  // Hold the load up as a stalled disk would: the engine process exists and makes no progress.
  const frozen = await eventually('the slow model\'s engine starts', async () => {
    const pid = await loadingEngineOf(world, MODELS.slow, world.setup.slowPath);
    if (pid === undefined) return undefined;
    if (world.log.after(at, 'ready', MODELS.slow).length > 0) return null;
    process.kill(pid, 'SIGSTOP');
    await sleep(SLOW_LOAD_FREEZE_MS);
    process.kill(pid, 'SIGCONT');
    return pid;
  }, RECOVER_TIMEOUT_MS, 25).catch(() => null);
  const outcome = await request;
  await world.unload(MODELS.slow); // after which the daemon has logged whatever became of its server
  const launched = world.log.after(at, 'launching', MODELS.slow).at(0);
  const ready = world.log.after(at, 'ready', MODELS.slow).at(0);
  const failures = world.log.after(at, 'failure', MODELS.slow);
  const loadS = launched !== undefined && ready !== undefined ? ((ready.at - launched.at) / 1000).toFixed(1) : null;
  return {
    ...base(id, 'slow-load', MODELS.slow, 'none'),
    at,
    until: outcome.endedAt,
    classifiedAs: failures[0]?.event.kind ?? (ready === undefined ? null : 'none'),
    seen: frozen !== null && ready !== undefined && failures.length === 0 && outcome.ok,
    note: `${frozen === null ? 'its load could not be frozen' : `its load frozen ${SLOW_LOAD_FREEZE_MS / 1000} s`}; ${loadS === null ? 'never ready' : `launch to ready ${loadS} s`}${failures.length > 0 ? `; counted as a failure (${failures[0]?.event.kind})` : ''}; its request ${outcome.ok ? 'was answered' : `failed: ${outcome.error?.message}`}`,
  };
};

const clientAbort: Episode = async (world, id, round) => {
  const at = Date.now();
  const abort = new AbortController();
  const outcome = await world.send(`client-abort #${round}`, id, {
    model: MODELS.chatC,
    stream: true,
    ...LONG,
    signal: abort.signal,
    onChunk: (count) => count === 3 && abort.abort(),
  });
  // Only this episode uses chat-c, so its count is this request's claim alone.
  const released = await eventually('chat-c holds no request', async () => ((await world.daemon().model(MODELS.chatC)).inFlight === 0 ? true : undefined), 10_000, 50).catch(() => false);
  // Not wanted after this, so that its idle time does not bring it back; once it has no server,
  // the daemon has logged whatever became of it. A hang-up taken for the engine's fault would be
  // a death there ("died while serving"); an eviction is a stop.
  await world.unload(MODELS.chatC);
  const failures = world.log.after(at, 'failure', MODELS.chatC);
  return {
    ...base(id, 'client-abort', MODELS.chatC, 'none'),
    at,
    until: outcome.endedAt,
    classifiedAs: failures[0]?.event.kind ?? (released ? 'none' : null),
    seen: outcome.error?.class === 'aborted' && outcome.chunks >= 3 && released && failures.length === 0,
    note: `the client ${outcome.error?.class === 'aborted' ? `hung up after ${outcome.chunks} chunks` : 'did not hang up'}; the daemon ${released ? 'released its claim' : 'still counts it in flight'}; ${failures.length > 0 ? `its engine was counted as failed (${failures[0]?.event.kind})` : 'no failure counted for its engine'}`,
  };
};

const daemonKill: Episode = async (world, id, round) => {
  const old = world.daemon();
  const pinnedBefore = (await old.model(MODELS.tiny)).pinned;
  const engines = await enginesUsing(world.workDir);
  const at = Date.now();
  await old.stop('SIGKILL');
  // Nobody ended them: they are the orphans the next daemon must end (engines.json).
  const orphans = engines.map((e) => e.pid).filter((pid) => isProcessAlive(pid));
  const next = await world.restartDaemon();
  const swept = world.log.after(at, 'orphans-ended').at(0)?.event.count ?? 0;
  const orphansLeft = (await Promise.all(orphans.map(async (pid) => ((await ended(pid, 10_000)) ? null : pid)))).filter((pid) => pid !== null);
  for (const pid of orphansLeft) process.kill(pid, 'SIGKILL'); // reported below; not left behind us
  const pinned = (await next.model(MODELS.tiny)).pinned;
  const back = await eventually('the pinned model serves again', async () => ((await next.model(MODELS.tiny)).upstream !== null ? Date.now() : undefined), RECOVER_TIMEOUT_MS).catch(() => null);
  return {
    ...base(id, 'daemon-kill', null, 'orphans ended'),
    at,
    until: (back ?? Date.now()) + AFTERMATH_MS,
    classifiedAs: swept > 0 ? `orphans ended (${swept})` : null,
    seen: orphans.length > 0 && orphansLeft.length === 0 && swept >= 1 && pinnedBefore && pinned && back !== null,
    restart: { orphans: orphans.length, ended: swept, left: orphansLeft.length, pinKept: pinnedBefore && pinned },
    note: `${orphans.length} engine(s) outlived the daemon (pids ${orphans.join(', ') || 'none'}); the new daemon ended ${swept}; ${orphansLeft.length === 0 ? 'none left' : `LEFT: ${orphansLeft.join(', ')}`}; ${MODELS.tiny} ${pinned ? 'still pinned' : 'NOT pinned'} and ${back === null ? 'NOT serving again' : 'serving again without a request'}`,
  };
};

function base(id: number, kind: FaultKind, modelId: string | null, expected: string): FaultRecord {
  return { id, kind, modelId, at: 0, until: 0, classifiedAs: null, expected, seen: false, note: '' };
}

export const EPISODES: Record<FaultKind, Episode> = {
  crash,
  hang,
  oom,
  invalid,
  'slow-load': slowLoad,
  'client-abort': clientAbort,
  'daemon-kill': daemonKill,
};
