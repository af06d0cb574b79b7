// The composition root: wires catalog, live budget, supervisor, controller, router and admin
// into one running daemon. `llmtray serve` and the Electron main process both start it here,
// so the desktop app and the headless mode are the same program with different faces.
//
// Nothing here decides anything: startDaemon lists named steps (core/daemon/README.md), each
// returning what undoes it, and turns the parts' events into "look again" (controller.trigger)
// and "something changed" (admin.changed).
import { mkdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureAdminToken, PinStore, type AdminService } from './admin/index.js';
import type { CatalogModel } from './catalog/catalog.js';
import { configFilePath, currentPlatform, dataDir as defaultDataDir } from './catalog/paths.js';
import { AsyncDisposableStore } from './common/async-disposable-store.js';
import { realClock } from './common/clock.js';
import { Emitter } from './common/emitter.js';
import { guardedProcessOutputs } from './common/guarded-output.js';
import { errorMessage } from './contracts/error-message.js';
import type { Log } from './controller/effects.js';
import { RuntimeOverhead } from './engine/runtime-overhead.js';
import { startMemoryLoop } from './engine/supervisor/memory/memory-loop.js';
import type { Supervisor } from './engine/supervisor/supervisor.js';
import { createGpuProbe } from './gpu/gpu-probe.js';
import { createEngineDeviceReader } from './gpu/llama-devices.js';
import { sampleAtCadence } from './gpu/sampling-cadence.js';
import type { Catalog } from './catalog/catalog.js';
import type { Controller } from './controller/controller.js';
import type { BudgetSample, LiveBudget } from './gpu/live-budget.js';
import { ModelActivity } from './demand/activity.js';
import { RequestLog } from './demand/request-log.js';
import { openMemoryBudget } from './daemon/memory/memory-budget.js';
import { openAdmin } from './daemon/admin-wiring.js';
import { startCatalogReloads } from './daemon/catalog-reloads.js';
import { suspectFaultyGpus } from './daemon/gpu-fault-watch.js';
import { makeControlLoop, runControlLoop } from './daemon/control-loop.js';
import { writeDaemonInfo, DAEMON_INFO_FILE } from './daemon/daemon-info.js';
import { fitDemoBudget, prepareDemo } from './daemon/demo.js';
import { startSupervisor } from './daemon/engine-supervisor.js';
import { openEnginesAndCatalog } from './daemon/engines-and-catalog.js';
import { acquireInstanceLock, processProbe } from './daemon/instance-lock.js';
import { Later } from './daemon/later.js';
import { listenRefusal, planListen } from './daemon/listen-plan.js';
import { createLogger } from './daemon/logger.js';
import { PullManager, whenListed, type MachineRoom } from './pull/index.js';
import { memoryLessons } from './daemon/memory/memory-lessons.js';
import { PinPolicy } from './demand/model-actions.js';
import { serveEndpoint, type ServedEndpoint } from './daemon/serve-endpoint.js';
import { conversationsDirOf, watchSavedConversations } from './daemon/saved-conversations-view.js';
import { passOnSpareChanges, warmSpareSizing } from './daemon/memory/warm-spare-sizing.js';
import { badConfigAtStartMessage, type AdviceFace } from './daemon/startup-advice.js';

export interface DaemonOptions {
  /** The config file; default the platform's config dir (or the demo's own with `demo`). */
  configPath?: string;
  /** Where pins, the admin token, engine records and measurements live; default the platform's data dir. */
  dataDir?: string;
  /** Overrides the config's listen port; 0 picks a free one. */
  port?: number;
  /** Overrides the config's listen host. */
  host?: string;
  /** Generate the demo models and serve them with a budget that shows swapping, fallback and quarantine. */
  demo?: boolean;
  /** Environment for every engine process, e.g. ELECTRON_RUN_AS_NODE=1 inside Electron. */
  engineEnv?: Record<string, string>;
  /** The built dashboard; default dist/renderer next to the compiled core. */
  staticDir?: string;
  /** Threads per engine; default half the cores. */
  threads?: number;
  /** How often the GPU and host memory are sampled, ms (≥ 1000). Default 2000. */
  budgetIntervalMs?: number;
  log?: (subsystem: string) => Log;
  /** Who reads a start-up refusal: the CLI's advice names its flags, the desktop app's what its user can do. Default 'cli'. */
  face?: AdviceFace;
}

export interface RunningDaemon {
  admin: AdminService;
  /** The OpenAI-compatible base URL, e.g. http://127.0.0.1:11435/v1. */
  endpoint: string;
  /** The same endpoint as other machines reach it when listening on the network (keys required); empty on loopback. */
  networkEndpoints: string[];
  /** The dashboard with the admin token in the fragment (never sent to the server). */
  dashboardUrl: string;
  port: number;
  dataDir: string;
  configPath: string;
  /** Stops every engine and waits for them, then releases the port and the lock. Idempotent. */
  stop(): Promise<void>;
}

/** dist/renderer beside the compiled core, or beside the sources when run from them. */
function defaultStaticDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const fromDist = resolve(here, '..', 'renderer');
  return existsSync(join(fromDist, 'index.html')) ? fromDist : resolve(here, '..', 'dist', 'renderer');
}

/**
 * The daemon, made in named steps (core/daemon/*.ts), each adding what undoes it to one store:
 * stopping runs them last first, each awaited, so the engines are gone before the port is
 * released and the port before the instance lock. A step uses only what the steps above it made;
 * the two cycles among the parts are named Laters (core/daemon/later.ts).
 */
export async function startDaemon(options: DaemonOptions = {}): Promise<RunningDaemon> {
  // First: from here on a closed terminal or a full disk under stdout/stderr never ends the daemon.
  const outputs = guardedProcessOutputs();
  const logFor = options.log ?? ((subsystem: string) => createLogger(subsystem));
  const log = logFor('daemon');
  const facts = currentPlatform();
  const dataDir = resolve(options.dataDir ?? defaultDataDir(facts));
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const face = options.face ?? 'cli';
  const lock = await acquireInstanceLock(dataDir, processProbe, process.pid, face);
  const parts = new AsyncDisposableStore((error) => log.error(`while stopping: ${errorMessage(error)}`));
  parts.add(() => lock.release());

  try {
    const startedAt = Date.now();
    const token = await ensureAdminToken(dataDir);
    const demo = options.demo === true ? await prepareDemo(dataDir) : null;
    const configPath = demo?.configPath ?? options.configPath ?? configFilePath(facts);
    const engines = await openEnginesAndCatalog({ configPath, dataDir, facts, log });
    const { catalog, llamaServerPath } = engines;
    // No good config was ever read: refused here, before the demo sizes its budget or anything listens.
    if (catalog.configErrors().length > 0) throw new Error(badConfigAtStartMessage(face, { configPath, errors: catalog.configErrors(), demo: demo !== null }));
    const runtime = new RuntimeOverhead(() => catalog.config().budget.engineOverheadBytes);
    // With a llama-server, its own device list names every card llama.cpp can use (Vulkan,
    // Intel, AMD without ROCm's tools), in the engines' own environment and device order.
    const gpuProbe = createGpuProbe(
      llamaServerPath === null ? {} : { engineDevices: createEngineDeviceReader(llamaServerPath, { env: { ...options.engineEnv, CUDA_DEVICE_ORDER: 'PCI_BUS_ID' } }) },
    );
    if (demo !== null) parts.add(await fitDemoBudget({ setup: demo, catalog, runtime, engine: llamaServerPath === null ? 'embedded' : 'llama-server', probe: gpuProbe, log }));
    for (const problem of catalog.problems()) log.warn(problem);
    const config = catalog.config();
    // Before any engine or port: an address other machines can reach needs a client key.
    const plan = planListen(options.host ?? config.listen.host);
    const refusal = listenRefusal(plan, config.listen, { configPath, fromFlag: options.host !== undefined, demo: demo !== null });
    if (refusal !== null) throw new Error(refusal);

    const activity = new ModelActivity(realClock);
    const requests = new RequestLog(config.activity.keep);
    const pins = await PinStore.open(dataDir);
    if (pins.problem) log.warn(pins.problem);
    const pinPolicy = new PinPolicy(pins);

    // The budget counts what our engines hold, and is made before the supervisor that runs them.
    const supervisorLater = new Later<Supervisor>('the supervisor');
    const memory = await openMemoryBudget({ probe: gpuProbe, catalog, enginePids: () => supervisorLater.peek()?.runningPids() ?? [], log });
    const { budget, cpuOnly } = memory;
    // Pulls from the Hugging Face Hub write into its cache, which the catalog scans; one left
    // unfinished by a stopped daemon continues now. With no quant named, the live budget says
    // which runs here. Stopped after the port, so no call starts one meanwhile.
    const pullLog = logFor('pull');
    const pulls = await PullManager.open({
      dataDir, facts, clock: realClock,
      modelDirs: () => catalog.config().modelDirs,
      whenServed: (name) => whenListed(catalog, name, realClock),
      reloadModels: () => catalog.reload().then(() => undefined),
      machineRoom: () => machineRoomOf(budget.current()),
      warn: (message) => pullLog.warn(message),
    });
    parts.add(() => pulls.close());
    // Each pull's end in the daemon's log too, where a person looks after the terminal that started it is gone.
    parts.add(pulls.onDidChange((pull) => {
      if (pull.state === 'done') pullLog.info(`${pull.id}: ${pull.message}`);
      if (pull.state === 'failed' || pull.state === 'cancelled') pullLog.warn(`${pull.id}: ${pull.state}: ${pull.message}`);
    }));
    const spareChanged = new Emitter<void>('the warm spare', (source, error) => log.warn(`a listener of ${source} threw: ${errorMessage(error)}`));
    const supervisor = supervisorLater.set(
      await startSupervisor({ dataDir, engines, memory, runtime, engineEnv: options.engineEnv, threads: options.threads, spareChanged: () => spareChanged.fire(), log }),
    );
    parts.add(() => supervisor.close());

    // What each model's engine process itself costs against the budget: its backend's context on
    // a GPU; its runtime in host RAM elsewhere (without a GPU, and on unified memory, where the
    // process's RAM is the device's).
    const runtimeBytes = (model: CatalogModel): number => runtime.bytes(engines.engineOf(model), memory.gpuMode() ? 'device' : 'host');
    const budgetIntervalMs = Math.max(1000, options.budgetIntervalMs ?? 2000);
    const spare = warmSpareSizing({ catalog, supervisor, runtime });
    const { controller, desired, turns } = makeControlLoop({
      catalog, supervisor, budget, budgetIntervalMs, activity, pinPolicy, keepsExpertsOnCpu: engines.keepsExpertsOnCpu, runtimeBytes, cpuOnly,
      warmSpareBytes: () => spare.allowedBytes(), splitsOverGpus: (model) => engines.engineOf(model) === 'llama-server', log: logFor('controller'),
    });
    parts.add(() => turns.close());
    parts.add(passOnSpareChanges(controller, spareChanged.event));
    const measuring = startMemoryLoop({
      supervisor,
      modelIds: () => catalog.models().map((model) => model.id),
      measuredOne: memoryLessons({ ...engines, supervisor, controller, gpuMode: memory.gpuMode, cpuOnly, runtimeBytes, log }),
      failed: (error) => log.warn(`measuring the model servers failed: ${errorMessage(error)}`),
    });
    parts.add(() => measuring.close());
    // Where it listens is known once the port is bound; the snapshot says nothing of it before.
    const served = new Later<ServedEndpoint>('the endpoint');
    const endpoint = (): string => { const at = served.peek(); return at === null ? '' : `${at.origin}/v1`; };
    const saved = watchSavedConversations({ root: conversationsDirOf(dataDir), onServerEvent: supervisor.onServerEvent });
    parts.add(() => saved.close());
    const adminWiring = openAdmin({
      snapshot: {
        startedAt,
        endpoint,
        // Other machines' base URLs: the allowed names are read per snapshot, as the router reads them per request.
        networkEndpoints: () => served.peek()?.networkEndpointsFor(catalog.config().listen.allowedHosts) ?? [],
        networkListener: plan.network,
        catalog,
        controller,
        supervisor,
        activity,
        isPinned: (model) => pinPolicy.isPinned(model),
        wanted: (id) => desired.wanted(id),
        engineOf: (model) => engines.engineOf(model),
        measuredBytes: (id) => measuring.measuredBytes(id),
        runtimeBytes,
        weightsOnCpu: cpuOnly,
        spareBytes: () => spare.spareBytes(),
        budget: () => budget.current(),
        limitBytes: () => catalog.config().budget.limitBytes ?? null,
        configPath,
        lostOutputs: () => outputs.lostOutputs(),
        savedConversations: saved,
      },
      catalog, controller, supervisor, budget, activity, requests, pins, pinPolicy, outputs, pulls,
      wanted: (id) => desired.wanted(id),
      changeSources: [spareChanged.event, measuring.onDidChange, saved.onDidChange],
      log,
    });
    const { admin } = adminWiring;
    parts.add(() => adminWiring.close());
    parts.add(lookAgainOnChanges({ budget, catalog, controller }));

    const at = served.set(await serveEndpoint({
      plan, port: options.port ?? config.listen.port, catalog, controller, supervisor, activity, turns, requests, admin, pulls, token,
      staticDir: options.staticDir ?? defaultStaticDir(), startedAt, face, configPath,
    }));
    parts.add(() => at.close());
    const lanEndpoints = at.networkEndpointsFor(config.listen.allowedHosts);
    if (at.ollamaPort?.listening === true) log.info(`apps with Ollama's address built in reach llmtray at http://127.0.0.1:${at.ollamaPort.port} too (listen.ollamaPort)`);
    if (at.ollamaPort?.listening === false) {
      log.warn(`listen.ollamaPort ${at.ollamaPort.port} is taken by another program (Ollama itself?): apps with Ollama's address built in reach that program, not llmtray; point them at ${at.origin}, or stop it and restart llmtray`);
    }

    // The loop, the samplers and the watchers.
    parts.add(runControlLoop(controller));
    const cadence = sampleAtCadence(budget, budgetIntervalMs, () => supervisor.hasServers(), () => catalog.config().budget.idleSampleMs);
    parts.add(() => cadence.stop());
    parts.add(watchServers(supervisor, cadence.serverStarted, logFor('events')));
    parts.add(suspectFaultyGpus(supervisor, budget, logFor('gpu')));
    // The demo's config too: it is the person's file once written, and an edit applies while running as any config's does.
    parts.add(reloadOnEdits({ catalog, configPath, log, supervisor, admin, budget }));

    await writeDaemonInfo(dataDir, { pid: process.pid, port: at.port, endpoint: endpoint(), origin: at.origin, startedAt });
    parts.add(() => rm(join(dataDir, DAEMON_INFO_FILE), { force: true }));
    log.info(`serving ${catalog.models().length} model(s) at ${endpoint()}${lanEndpoints.length > 0 ? ` and on the network at ${lanEndpoints.join(', ')} (client keys required)` : ''}`);

    return {
      admin,
      endpoint: endpoint(),
      networkEndpoints: lanEndpoints,
      dashboardUrl: `${at.origin}/#token=${token}`,
      port: at.port,
      dataDir,
      configPath,
      stop: () => parts.dispose(),
    };
  } catch (error) {
    await parts.dispose();
    throw error;
  }
}

/** What the machine offers one model now, as the pull chooses a quant by it; null before the first sample. */
function machineRoomOf(budget: BudgetSample | null): MachineRoom | null {
  if (budget === null) return null;
  const gpus = budget.mode === 'cpu' ? [] : budget.perGpu.map((gpu) => ({ index: gpu.index, name: gpu.name, budgetBytes: gpu.budgetBytes }));
  // Unified memory is one pool, offered as one device.
  if (budget.mode === 'unified' && gpus.length === 0) gpus.push({ index: 0, name: 'unified memory', budgetBytes: budget.totalBytes });
  return { mode: budget.mode, gpus, hostBytes: budget.hostAvailableBytes };
}

/** Events that change what the plan should be → "look again". Returns the unsubscribe. */
function lookAgainOnChanges(parts: { budget: LiveBudget; catalog: Catalog; controller: Controller }): () => void {
  const { budget, catalog, controller } = parts;
  const unsubscribes = [
    budget.onDidChange(() => controller.trigger()),
    catalog.onDidChange(() => {
      controller.trigger();
      // A reload may have changed the limit or reserve: the budget applies it now, not at the next (idle: slow) sample.
      budget.sampleNow().catch(() => undefined);
    }),
  ];
  return () => {
    for (const unsubscribe of unsubscribes) unsubscribe();
  };
}

/** The catalog reloaded on every edit of the config and the model dirs. Returns the stop. */
function reloadOnEdits(parts: { catalog: Catalog; configPath: string; log: Log; supervisor: Supervisor; admin: { changed(): void }; budget: LiveBudget }): () => void {
  const { catalog, configPath, log, supervisor, admin, budget } = parts;
  const reloads = startCatalogReloads({
    catalog,
    configPath,
    log,
    isRunning: (modelId) => supervisor.endpointFor(modelId) !== null,
    // The catalog announces a changed model list only; a reload that changed only `listen` (an
    // endpoint, a key revoked) or the budget must reach an open dashboard and the tray too, not
    // wait for their next unrelated update; an edited limit or reserve applies at once, not at
    // the next sample (10 s away while idle).
    onApplied: () => {
      admin.changed();
      budget.sampleNow().catch(() => undefined);
    },
  });
  return () => reloads.close();
}

/** The first server of an idle daemon wakes the budget's sampler; a ready server that ended on its own is said. Returns the unsubscribe. */
function watchServers(supervisor: Supervisor, serverStarted: () => void, log: Log): () => void {
  return supervisor.onServerEvent((event) => {
    if (event.type === 'ServerSpawned') serverStarted();
    if (event.type === 'ServerExited' && event.wasReady) log.warn(`${event.modelId}'s server ended on its own (${event.kind}): ${event.reason}`);
  });
}
