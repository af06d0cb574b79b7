// The soak's scenario: the real daemon (under an address-space limit, so out-of-memory is real)
// with real engines, traffic clients driving swaps, the fault injector striking between swaps,
// the daemon at rest measured after its warm-up and at the end, then stopped and checked for
// anything left behind. Returns everything it saw and the verdict; prints progress through `say`.
//
//   start daemon ─ pin tiny ─ traffic ─┬─ faults with the daemon's kills (restart on the same data dir and port)
//                                       ├─ warm-up: a round of the other faults, swaps ─ at rest: fds, RSS, live heap (baseline)
//                                       ├─ the other faults ─ swaps up to the target
//                                       └─ at rest: fds, RSS, live heap, in flight ─ SIGTERM ─ engines, ports left?
//
// Every daemon runs with its inspector open on 127.0.0.1 (live-heap.ts), so that at rest its
// live heap after a full GC is read beside its RSS: the leak bound is on the first.
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { enginesUsing, eventually, isProcessAlive, sleep, startDaemonProcess, type DaemonExit, type DaemonProcess } from '../support/daemon-process.js';
import { EMBEDDED_ENGINE_NODE_FLAGS } from '../../core/engine/supervisor/engine-command.js';
import { DaemonLogRecorder } from './daemon-log.js';
import type { FaultRecord } from './explain.js';
import { EPISODES, type FaultWorld } from './faults.js';
import type { ProcessSample, SoakRecord } from './invariants.js';
import { INSPECT_FLAG, inspectorUrl, liveHeapAfterGc } from './live-heap.js';
import { addressSpaceLimit, commandLine, fdCount, listeningSockets, peakAddressSpaceBytes, rssBytes, socketOwners } from './proc.js';
import { planEpisodes, type FaultKind, type SoakOptions } from './profiles.js';
import { sendChat, type Outcome, type RequestResult } from './request-outcome.js';
import { EvictionLog } from './server-log.js';
import { SnapshotRecorder } from './snapshot-recorder.js';
import { MODELS, prepareSoak, TRAFFIC_MODELS } from './soak-config.js';
import { renderSummary } from './summary-table.js';
import { SwapCounter } from './swap-counter.js';
import { Traffic } from './traffic.js';

export interface SoakResult {
  record: SoakRecord;
  summary: string;
  pass: boolean;
}

/** Swaps the last daemon serves before it is measured at rest: the code paths warm, the caches filled. */
const WARMUP_SWAPS = 3;
/**
 * At rest, wait this long before counting descriptors: idle keep-alive connections (the
 * clients' 4 s, the engines' and the daemon's 5 s) close by then, and are not leaks.
 */
const KEEP_ALIVE_SETTLE_MS = 7_000;
/** A request's own deadline: the soak's activation bound (180 s) and a generation, with room to spare. */
const REQUEST_TIMEOUT_MS = 300_000;

function requirePrlimit(): void {
  const probe = spawnSync('prlimit', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error('the soak runs the daemon under `prlimit --as` (util-linux) to make out-of-memory launches real, and prlimit is not on PATH');
  }
}

const machine = (): string =>
  `node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}`;

export async function runSoak(options: SoakOptions, say: (line: string) => void = () => {}): Promise<SoakResult> {
  requirePrlimit();
  const { profile } = options;
  const startedAt = Date.now();
  const machineAtStart = machine();
  const deadline = startedAt + profile.maxDurationMs;
  const workDir = await mkdtemp(join(tmpdir(), 'llmtray-soak-'));
  const dataDir = join(workDir, 'data');
  say(`work dir ${workDir}; writing the models`);
  const setup = await prepareSoak(workDir);

  const log = new DaemonLogRecorder();
  const evictionLog = new EvictionLog();
  const snapshots = new SnapshotRecorder((life, batch) => evictionLog.append(life, batch));
  const counter = new SwapCounter(log);
  const outcomes: Outcome[] = [];
  const faults: FaultRecord[] = [];
  const enginePidsSeen = new Set<number>();
  let life = 0;
  let daemon: DaemonProcess | null = null;
  let client: OpenAI | null = null;
  let traffic: Traffic | null = null;
  let aborted: string | null = null;
  let baseline: ProcessSample | null = null;
  let end: ProcessSample | null = null;
  let inFlightAtEnd: number | null = null;
  let daemonExit: DaemonExit | null = null;
  let peakAddressSpace = 0;

  const alive = (): DaemonProcess => {
    if (daemon === null) throw new Error('no daemon is running');
    return daemon;
  };
  const start = async (port?: number): Promise<DaemonProcess> => {
    const started = await startDaemonProcess({
      dataDir,
      config: setup.configPath,
      launcher: ['prlimit', `--as=${setup.addressSpaceBytes}`],
      startTimeoutMs: 60_000,
      // Under the address-space limit the daemon's Node needs what its engines get: without it,
      // Node 22 died of "Cannot allocate Wasm memory" at its first fetch to an engine
      // (engine-command.ts says why).
      nodeFlags: [INSPECT_FLAG, ...EMBEDDED_ENGINE_NODE_FLAGS],
      ...(port === undefined ? {} : { port }),
    });
    log.attach(started.child, life, started.stderr());
    snapshots.follow(started, life);
    const limit = addressSpaceLimit(started.pid);
    if (limit !== setup.addressSpaceBytes) throw new Error(`the daemon (pid ${started.pid}) runs with an address-space limit of ${limit}, not ${setup.addressSpaceBytes}`);
    return started;
  };
  const record = (origin: string, faultId: number | null, result: RequestResult): Outcome => {
    const outcome = { id: outcomes.length + 1, origin, faultId, ...result };
    outcomes.push(outcome);
    return outcome;
  };
  const noteEngines = async () => {
    for (const engine of await enginesUsing(workDir)) enginePidsSeen.add(engine.pid);
  };

  const unload = async (modelId: string): Promise<void> => {
    const d = alive();
    const view = await d.model(modelId);
    const hasServer = view.upstream !== null || view.status.state === 'loading' || view.status.state === 'evicting';
    const expected = hasServer ? counter.expectUnload(modelId) : null;
    const res = await d.api(`/api/models/${encodeURIComponent(modelId)}/unload`, { method: 'POST' });
    if (!res.ok) throw new Error(`unloading ${modelId} answered ${res.status}: ${await res.text()}`);
    if (!hasServer) return;
    const gone = await eventually(`${modelId} has no server`, async () => {
      const now = await d.model(modelId);
      return now.upstream === null && !['loading', 'evicting'].includes(now.status.state) ? true : undefined;
    }, 90_000).catch(() => false);
    if (!gone) {
      expected?.cancel();
      throw new Error(`${modelId} still had a server 90 s after it was unloaded`);
    }
  };

  /** Traffic paused, every model but the pinned one unloaded, idle connections closed: the daemon at rest. */
  const atRest = async (label: string): Promise<{ sample: ProcessSample; inFlight: number }> => {
    const d = alive();
    await traffic?.pause();
    await noteEngines();
    for (const model of (await d.state()).models) {
      if (!model.pinned) await unload(model.id);
    }
    await eventually(`the daemon is at rest (${label})`, async () => {
      const state = await d.state();
      return state.models.every((m) => m.inFlight === 0 && (m.pinned ? m.upstream !== null : m.upstream === null)) ? true : undefined;
    }, 90_000);
    await sleep(KEEP_ALIVE_SETTLE_MS);
    // Counted before this soak opens a connection of its own again (the inspector's among them),
    // and RSS before the collection, as it stands at rest.
    const at = Date.now();
    const fds = fdCount(d.pid);
    const rss = rssBytes(d.pid);
    const url = inspectorUrl(d.stderr());
    if (url === null) throw new Error(`the daemon (pid ${d.pid}) printed no inspector URL, so its live heap cannot be read`);
    const heap = await liveHeapAfterGc(url);
    const sample: ProcessSample = { at, fds, rssBytes: rss, liveHeapBytes: heap.heapUsedBytes, externalBytes: heap.externalBytes };
    const inFlight = (await d.state()).models.reduce((n, m) => n + m.inFlight, 0);
    const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
    say(`at rest (${label}): ${sample.fds} fds, RSS ${mib(sample.rssBytes)}, live heap after GC ${mib(sample.liveHeapBytes)} (external ${mib(sample.externalBytes)}), ${inFlight} in flight`);
    traffic?.resume();
    return { sample, inFlight };
  };

  const world: FaultWorld = {
    setup,
    workDir,
    log,
    daemon: alive,
    send: async (origin, faultId, request) => record(origin, faultId, await sendChat(client as OpenAI, request)),
    unload,
    restartDaemon: async () => {
      const port = alive().port;
      life++;
      daemon = await start(port);
      return daemon;
    },
  };

  const faultCounts = new Map<FaultKind, number>();
  const inject = async (kind: FaultKind): Promise<void> => {
    const round = (faultCounts.get(kind) ?? 0) + 1;
    faultCounts.set(kind, round);
    await noteEngines();
    const fault = await EPISODES[kind](world, faults.length + 1, round);
    faults.push(fault);
    say(`${kind} #${round}: ${fault.seen ? 'seen' : 'NOT SEEN'}, classified as ${fault.classifiedAs ?? 'nothing'} — ${fault.note} (${counter.swaps} swaps so far)`);
  };
  const afterSwaps = async (count: number, what: string): Promise<boolean> => {
    if (aborted !== null) return false;
    if (await counter.until(count, deadline)) return true;
    aborted = `${what} was not reached within ${profile.maxDurationMs / 60_000} min (${counter.swaps} swaps)`;
    return false;
  };

  try {
    daemon = await start();
    say(`daemon pid ${daemon.pid} at ${daemon.endpoint}, under prlimit --as=${setup.addressSpaceBytes} (tiny's engine alone holds ${(setup.tinyEngineBytes / 1e9).toFixed(2)} GB); budget ${(setup.budgetBytes / 2 ** 30).toFixed(2)} GiB`);
    client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0, timeout: REQUEST_TIMEOUT_MS });
    const pin = await daemon.api(`/api/models/${MODELS.tiny}/pin`, { method: 'POST' });
    if (!pin.ok) throw new Error(`pinning ${MODELS.tiny} answered ${pin.status}: ${await pin.text()}`);
    await eventually(`${MODELS.tiny} serves after its pin`, async () => ((await alive().model(MODELS.tiny)).upstream !== null ? true : undefined), 60_000);

    traffic = new Traffic({ client, clients: profile.clients, models: TRAFFIC_MODELS, record: (origin, result) => void record(origin, null, result) });
    traffic.start();
    const plan = planEpisodes(profile);
    for (const kind of plan.restarts) {
      if (!(await afterSwaps(counter.swaps + profile.swapsBetweenFaults, `the swaps before ${kind}`))) break;
      await inject(kind);
    }
    for (const kind of plan.warmUp) {
      if (!(await afterSwaps(counter.swaps + profile.swapsBetweenFaults, `the swaps before ${kind}`))) break;
      await inject(kind);
    }
    if (await afterSwaps(counter.swaps + WARMUP_SWAPS, "the last daemon's warm-up")) baseline = (await atRest('after warm-up')).sample;
    for (const kind of plan.lastLife) {
      if (!(await afterSwaps(counter.swaps + profile.swapsBetweenFaults, `the swaps before ${kind}`))) break;
      await inject(kind);
    }
    await afterSwaps(profile.targetSwaps, `the target of ${profile.targetSwaps} swaps`);
    const rest = await atRest('end');
    end = rest.sample;
    inFlightAtEnd = rest.inFlight;
  } catch (error) {
    aborted = `the run stopped: ${error instanceof Error ? error.message : String(error)}`;
  }

  // The end: stop everything, then look for anything left behind.
  await traffic?.stop();
  snapshots.stop();
  if (daemon !== null) {
    await noteEngines().catch(() => undefined);
    if (isProcessAlive(daemon.pid)) peakAddressSpace = peakAddressSpaceBytes(daemon.pid);
    daemonExit = await daemon.stop('SIGTERM', 60_000);
  }
  for (const pid of snapshots.enginePids) enginePidsSeen.add(pid);
  const enginesLeft = [...new Set([...[...enginePidsSeen].filter((pid) => isProcessAlive(pid)), ...(await enginesUsing(workDir)).map((e) => e.pid)])];
  const seenPorts = snapshots.enginePorts;
  const listening = listeningSockets().filter((s) => seenPorts.has(s.port));
  const owners = socketOwners(new Set(listening.map((s) => s.inode)));
  const portsLeft = listening.filter((s) => (owners.get(s.inode) ?? []).some((pid) => commandLine(pid).includes(workDir) || enginesLeft.includes(pid))).map((s) => s.port);
  // Whatever the verdict, nothing of this run may outlive it: these are our own engines, by pid.
  for (const pid of enginesLeft) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  const soakRecord: SoakRecord = {
    profile,
    outcomes,
    faults,
    swaps: counter.swaps,
    pinnedEvictions: log.events.filter((e) => e.event.type === 'evicting' && e.event.modelId === MODELS.tiny).length,
    pinnedPidsByLife: [...snapshots.servingPids.values()].map((byModel) => byModel.get(MODELS.tiny) ?? []),
    evictionsLogged: evictionLog.evictions.length,
    claimedEvictions: evictionLog.evictions.filter((e) => e.inFlight > 0).map((e) => `${e.modelId} (pid ${e.pid}, life ${e.life}): ${e.inFlight} in flight`),
    serverLogLinesNotSeen: evictionLog.linesNotSeen,
    baseline,
    end,
    inFlightAtEnd,
    enginesSeen: enginePidsSeen.size,
    enginesLeft,
    portsSeen: seenPorts.size,
    portsLeft,
    daemonExit,
    aborted,
  };
  const endedAt = Date.now();
  const { text, pass } = renderSummary(soakRecord, {
    machine: `${machineAtStart} at the start, ${loadavg().map((n) => n.toFixed(2)).join(' ')} at the end; the daemon under prlimit --as=${(setup.addressSpaceBytes / 1e9).toFixed(2)} GB (tiny's engine alone ${(setup.tinyEngineBytes / 1e9).toFixed(2)} GB; the daemon's peak: ${(peakAddressSpace / 1e9).toFixed(2)} GB)`,
    startedAt,
    endedAt,
    launches: counter.launches,
  });

  if (options.outDir !== null) {
    await mkdir(options.outDir, { recursive: true });
    for (let l = 0; l <= life; l++) {
      await writeFile(join(options.outDir, `daemon-${l}.log`), log.lines.filter((line) => line.life === l).map((line) => line.text).join('\n') + '\n');
    }
    await writeFile(join(options.outDir, 'outcomes.jsonl'), outcomes.map((o) => JSON.stringify(o)).join('\n') + '\n');
    await writeFile(join(options.outDir, 'faults.json'), `${JSON.stringify(faults, null, 2)}\n`);
    await writeFile(join(options.outDir, 'summary.txt'), `${text}\n`);
  }
  if (!options.keep) await rm(workDir, { recursive: true, force: true });
  return { record: soakRecord, summary: text, pass };
}
