// The composition root: wires catalog, live budget, supervisor, controller, router and admin
// into one running daemon. `llmtray serve` and the Electron main process both start it here,
// so the desktop app and the headless mode are the same program with different faces.
//
// Nothing here decides anything; it only connects the parts and turns their events into
// "look again" (controller.trigger) and "something changed" (admin.changed).
import { mkdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AdminService, createAdminHandler, ensureAdminToken, LogFeed, PinStore } from './admin/index.js';
import { Catalog, type CatalogModel } from './catalog/catalog.js';
import { CPU_BUFFERS_FILE_NAME, CpuBufferStore, cpuBufferKey } from './catalog/cpu-buffers.js';
import type { LlmtrayConfig } from './catalog/config/load-config.js';
import { configFilePath, currentPlatform, dataDir as defaultDataDir } from './catalog/paths.js';
import { Controller, DEFAULT_HEALTHY_AFTER_MS } from './controller/controller.js';
import type { Log } from './controller/effects.js';
import { LaunchError } from './engine/failure-classifier.js';
import { findLlamaServer } from './engine/llama-server/find-binary.js';
import { probeCapabilities } from './engine/llama-server/capabilities.js';
import { realClock } from './common/clock.js';
import { defaultEngineCommand, embeddedEngineCommand } from './engine/supervisor/engine-command.js';
import { Supervisor } from './engine/supervisor/supervisor.js';
import { queryComputeApps, sharedComputeAppsReader } from './gpu/compute-apps.js';
import { execFileText } from './gpu/exec-file.js';
import { createGpuProbe, type GpuProbe } from './gpu/gpu-probe.js';
import { createEngineDeviceReader } from './gpu/llama-devices.js';
import { computeBudget } from './gpu/compute-budget.js';
import { RuntimeOverhead, type RuntimePlace } from './engine/runtime-overhead.js';
import { createLiveBudget, DEFAULT_BUDGET_CONFIG, type BudgetSample } from './gpu/live-budget.js';
import { engineIdentities } from './gpu/engine-identity.js';
import { createOwnUsageProvider } from './gpu/own-usage.js';
import { estimateOnCpu, footprintAt } from './policy/levels.js';
import { createRouter, type ListeningRouter, type RouterAccess } from './router/router.js';
import { ModelActivity } from './daemon/activity.js';
import { startCatalogReloads } from './daemon/catalog-reloads.js';
import { prepareDemo, demoBudgetLimit, writeDemoLimit } from './daemon/demo.js';
import { DaemonDesiredState, pricedEstimate } from './daemon/desired-state.js';
import { spareFits } from './daemon/spare-room.js';
import { createGateway } from './daemon/gateway.js';
import { feedLoadProgress } from './daemon/load-progress-feed.js';
import { ModelTurns } from './daemon/turns.js';
import { acquireInstanceLock, processProbe, type InstanceLock } from './daemon/instance-lock.js';
import { portTakenMessage, type AdviceFace } from './daemon/startup-advice.js';
import { engineFor, launchSpecFor } from './daemon/launch-specs.js';
import type { LaunchSpec } from './engine/launch-spec.js';
import { cpuBufferLesson, embeddedEngineBuild, thisCpu } from './daemon/cpu-buffer-learning.js';
import { footprintToLearn } from './daemon/learned-footprint.js';
import { createLogger } from './daemon/logger.js';
import { guardedProcessOutputs } from './common/guarded-output.js';
import { createModelActions, PinPolicy } from './daemon/model-actions.js';
import { buildSnapshot } from './daemon/snapshot-builder.js';
import { writeDaemonInfo, DAEMON_INFO_FILE } from './daemon/daemon-info.js';
import { listenRefusal, localOrigin, networkEndpoints, planListen } from './daemon/listen-plan.js';
import { formatBytes } from './contracts/format-bytes.js';
import type { LaunchLevel } from './contracts/launch-level.js';
import { errorMessage } from './contracts/error-message.js';

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

/** How often each running server's memory is measured for the picture (and, on a GPU, learned). */
export const MEASURE_INTERVAL_MS = 5_000;
/**
 * How often the budget is sampled while no model server runs or loads. Nothing of ours is at
 * stake then, so the picture may lag this much behind other programs; what a decision needs is
 * read fresh instead (a pass never plans on a sample older than the running cadence). Why it
 * matters: the 2 s sample was most of what an idle daemon cost (issue 14: at most 0.2 % CPU).
 */
export const IDLE_BUDGET_INTERVAL_MS = 10_000;

export async function startDaemon(options: DaemonOptions = {}): Promise<RunningDaemon> {
  // First: from here on a closed terminal or a full disk under stdout/stderr never ends the daemon.
  const outputs = guardedProcessOutputs();
  const logFor = options.log ?? ((subsystem: string) => createLogger(subsystem));
  const log = logFor('daemon');
  const facts = currentPlatform();
  const dataDir = resolve(options.dataDir ?? defaultDataDir(facts));
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const face = options.face ?? 'cli';
  const lock: InstanceLock = await acquireInstanceLock(dataDir, processProbe, process.pid, face);
  const cleanups: (() => Promise<void> | void)[] = [() => lock.release()];
  const stopAll = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (error) {
        log.error(`while stopping: ${errorMessage(error)}`);
      }
    }
  };

  try {
    const startedAt = Date.now();
    const token = await ensureAdminToken(dataDir);
    const demo = options.demo === true ? await prepareDemo(dataDir) : null;
    const configPath = demo?.configPath ?? options.configPath ?? configFilePath(facts);
    // The CPU's extra weight buffers, learned per (engine build, CPU): the llama-server's build is
    // known once it is found, so the first assembly prices with the embedded engine's alone.
    const cpuBuffers = await CpuBufferStore.open(join(dataDir, CPU_BUFFERS_FILE_NAME));
    const cpu = thisCpu();
    const engineBuilds: Record<LaunchSpec['engine'], string | null> = { embedded: embeddedEngineBuild(), 'llama-server': null };
    let engineOfModel = (model: Pick<CatalogModel, 'engine'>): LaunchSpec['engine'] => engineFor(model, null);
    const cpuBufferKeyOf = (model: Pick<CatalogModel, 'engine'>): string | null => {
      const build = engineBuilds[engineOfModel(model)] ?? null;
      return build === null ? null : cpuBufferKey(build, cpu);
    };
    const catalog = await Catalog.open({
      configPath,
      dataDir,
      facts,
      cpuBufferRatios: (model) => {
        const key = cpuBufferKeyOf(model);
        return key === null ? {} : cpuBuffers.ratios(key);
      },
    });
    const firstConfig = catalog.config();
    const llamaServer = await findLlamaServer(firstConfig.llamaServerPath === undefined ? {} : { configured: firstConfig.llamaServerPath });
    const llamaServerPath = llamaServer.found ? llamaServer.path : null;
    engineOfModel = (model) => engineFor(model, llamaServerPath);
    if (llamaServerPath !== null) {
      const version = await probeCapabilities(llamaServerPath).then((c) => c.version, () => null);
      engineBuilds['llama-server'] = `llama-server ${version ?? llamaServerPath}`;
      await catalog.reload();
    }
    if (llamaServer.found) log.info(`llama-server: ${llamaServer.path} (${llamaServer.source})`);
    // A configured one that is missing is the person's mistake to fix: said with its path, as a warning.
    else if (firstConfig.llamaServerPath !== undefined) log.warn(`${llamaServer.reason}; until then, models with engine auto run on the embedded engine and those with engine: llama-server cannot start`);
    else log.info('no llama-server found; models run on the embedded engine');
    const runtime = new RuntimeOverhead(() => catalog.config().budget.engineOverheadBytes);
    // With a llama-server, its own device list names every card llama.cpp can use (Vulkan,
    // Intel, AMD without ROCm's tools), in the engines' own environment and device order.
    const gpuProbe = createGpuProbe(
      llamaServerPath === null ? {} : { engineDevices: createEngineDeviceReader(llamaServerPath, { env: { ...options.engineEnv, CUDA_DEVICE_ORDER: 'PCI_BUS_ID' } }) },
    );
    if (demo !== null) {
      // Every model's footprint includes its engine's own cost, so the demo's limit does too, and
      // follows it as it is measured: sized with the prior, a runtime measured lower let
      // demo-chat and demo-tiny fit together, and the demo stopped showing a swap.
      const demoEngine = llamaServerPath === null ? 'embedded' : 'llama-server';
      const demoPlace = await runtimePlaceAtStart(gpuProbe);
      let fitting: Promise<void> = Promise.resolve();
      const fitDemoLimit = (): Promise<void> =>
        (fitting = fitting.then(async () => {
          const limit = demoBudgetLimit(catalog.models(), runtime.bytes(demoEngine, demoPlace), demoPlace === 'host');
          if (limit === null || limit === catalog.config().budget.limitBytes) return;
          await writeDemoLimit(demo, limit);
          await catalog.reload();
        }));
      await fitDemoLimit();
      const unsubscribe = runtime.onLearned(() => {
        fitDemoLimit().catch((error: unknown) => log.warn(`resizing the demo's budget limit failed: ${errorMessage(error)}`));
      });
      cleanups.push(async () => {
        unsubscribe();
        await fitting.catch(() => undefined);
      });
    }
    for (const problem of catalog.problems()) log.warn(problem);
    const config = catalog.config();
    // Before any engine or port: an address other machines can reach needs a client key.
    const plan = planListen(options.host ?? config.listen.host);
    const refusal = listenRefusal(plan, config.listen, { configPath, fromFlag: options.host !== undefined, demo: demo !== null });
    if (refusal !== null) throw new Error(refusal);

    const activity = new ModelActivity(realClock);
    const pins = await PinStore.open(dataDir);
    if (pins.problem) log.warn(pins.problem);
    const pinPolicy = new PinPolicy(pins);

    // One per-process GPU query for the budget's own-usage and the supervisor's measurements.
    const computeApps = sharedComputeAppsReader(() => queryComputeApps(execFileText), realClock);
    // The supervisor is made after the budget, which asks it for our engines' pids.
    let supervisorRef: Supervisor | null = null;
    const budget = createLiveBudget({
      probe: gpuProbe,
      ownUsage: createOwnUsageProvider({ pids: () => supervisorRef?.runningPids() ?? [], computeApps }),
      config: () => {
        const { budget } = catalog.config();
        return { reserveBytes: budget.reserveBytes, limitBytes: budget.limitBytes ?? null, unifiedShare: budget.unifiedShare ?? DEFAULT_BUDGET_CONFIG.unifiedShare };
      },
      onError: (error) => log.warn(`memory probe failed; keeping the last budget: ${errorMessage(error)}`),
    });
    const budgetIntervalMs = Math.max(1000, options.budgetIntervalMs ?? 2000);
    /** Whether the sampler waits out the idle interval now (no model server ran at its last sample). */
    let samplingIdle = false;
    const firstSample = await budget.sampleNow();
    log.info(`memory budget: ${firstSample.mode} mode, ${formatBytes(firstSample.totalBytes)}${firstSample.reason ? ` (${firstSample.reason})` : ''}`);
    const currentBudget = (): BudgetSample => budget.current() ?? firstSample;
    const cpuOnly = () => currentBudget().mode === 'cpu';

    const footprint = (modelId: string, level: LaunchLevel): number => {
      const estimate = catalog.resolve(modelId)?.estimate;
      return estimate == null ? 0 : footprintAt(level, cpuOnly() ? estimateOnCpu(estimate) : estimate).deviceBytes;
    };
    const gpuMode = () => currentBudget().mode === 'gpu';
    // Set once the admin service exists; the spare can change before that.
    let spareChanged = (): void => {};
    const supervisor = await Supervisor.start({
      dataDir,
      specFor: (modelId) =>
        launchSpecFor(modelId, {
          resolve: (id) => catalog.resolve(id),
          cpuOnly,
          llamaServerPath,
          ...(llamaServer.found ? {} : { noLlamaServer: llamaServer.reason }),
          ...(options.engineEnv === undefined ? {} : { engineEnv: options.engineEnv }),
          ...(options.threads === undefined ? {} : { threads: options.threads }),
        }),
      engineCommand: defaultEngineCommand({ llamaServerPath }),
      footprint,
      computeBytes: (modelId: string) => {
        const estimate = catalog.resolve(modelId)?.estimate;
        return estimate == null ? 0 : estimate.computeBytes + (estimate.draft?.computeBytes ?? 0);
      },
      hostIsDevice: cpuOnly,
      runtime,
      memoryProbe: async () => {
        if (!gpuMode()) return Number.POSITIVE_INFINITY; // host memory is back when the process is gone
        const sample = await budget.sampleNow();
        return sample.perGpu.reduce((sum, gpu) => sum + Math.max(0, gpu.totalBytes - gpu.usedBytes), 0);
      },
      gpuProcessMemory: async () => {
        const byPid = new Map<number, number>();
        if (!gpuMode()) return byPid;
        for (const app of await computeApps().catch(() => [])) {
          if (app.usedBytes !== null) byPid.set(app.pid, (byPid.get(app.pid) ?? 0) + app.usedBytes);
        }
        return byPid;
      },
      // The warm spare runs under the engines' common environment, so a launch with no env of its own can adopt it.
      warmSpare: { command: async () => embeddedEngineCommand(), env: options.engineEnv ?? {}, note: (line) => log.info(line) },
      onSpareChange: () => spareChanged(),
      gpuIdentity: engineIdentities(currentBudget),
    });
    supervisorRef = supervisor;
    cleanups.push(() => supervisor.close());
    if (supervisor.orphans.ended.length > 0) log.warn(`ended ${supervisor.orphans.ended.length} model server(s) left by an earlier run`);

    // What each model's engine process itself costs against the budget: its backend's context on
    // a GPU; its runtime in host RAM elsewhere (without a GPU, and on unified memory, where the
    // process's RAM is the device's).
    const runtimeBytes = (model: CatalogModel): number => runtime.bytes(engineFor(model, llamaServerPath), currentBudget().mode === 'gpu' ? 'device' : 'host');
    // Only a llama-server build with --n-cpu-moe keeps a mixture of experts' expert tensors on
    // the CPU; node-llama-cpp has no such option. `place` is not offered what the engine cannot do.
    const llamaServerMoe = llamaServerPath === null ? false : await probeCapabilities(llamaServerPath).then(
      (capabilities) => capabilities.flags.has('--n-cpu-moe') || capabilities.flags.has('-ncmoe'),
      () => false,
    );
    const keepsExpertsOnCpu = (model: CatalogModel): boolean => engineFor(model, llamaServerPath) === 'llama-server' && llamaServerMoe;
    // Created before the controller it asks (rivals, a pass): the closures run only in passes and requests, after both exist.
    const turns = new ModelTurns({
      rivalsOf: (id) => controller.yieldsTo(id),
      passSoon: () => controller.trigger(),
      activity,
      inFlight: (id) => supervisor.inFlight(id),
      turnMs: config.swapTurnMs,
      clock: realClock,
    });
    cleanups.push(() => turns.close());
    const desired = new DaemonDesiredState({
      models: () => catalog.models(),
      heldForTurn: (id) => turns.holds(id),
      keepsExpertsOnCpu,
      splitsOverGpus: (model) => engineFor(model, llamaServerPath) === 'llama-server',
      weightsOnCpu: cpuOnly,
      isPinned: (model) => pinPolicy.isPinned(model),
      activity,
      inFlight: (id) => supervisor.inFlight(id),
      runtimeBytes,
      // At most the running cadence old (and a half, so a pass at the end of a window does not probe again), though idle sampling is slower.
      budget: () => budget.fresh(budgetIntervalMs * 1.5),
    });
    const controller = new Controller({
      provider: desired,
      server: supervisor,
      classify: (error) => (error instanceof LaunchError ? error.kind : 'crash'),
      clock: realClock,
      log: logFor('controller'),
      healthyAfterMs: () => catalog.config().healthyAfterMs ?? DEFAULT_HEALTHY_AFTER_MS,
    });

    const measured = new Map<string, number>();
    let origin = '';
    const endpoint = () => (origin === '' ? '' : `${origin}/v1`);
    // Other machines' base URLs, once the port is bound. The allowed names are read per snapshot,
    // as the router reads them per request, so a name a reload removed is no longer offered.
    let networkEndpointsFor: ((allowedHosts: readonly string[]) => string[]) | null = null;
    // The warm spare is kept only in memory the plan leaves free (daemon/spare-room.ts); looked at
    // again whenever a server, the plan, the budget or the config changes.
    const spareBytes = (): number => supervisor.spareStatus()?.residentBytes ?? runtime.bytes('embedded', 'host');
    const heldBytes = (): number =>
      catalog.models().reduce((sum, model) => {
        const server = supervisor.status(model.id);
        if (server === null || server.phase === 'exited') return sum;
        const counted = controller.held(model.id);
        if (counted !== null) return sum + counted.bytes;
        const priced = pricedEstimate(model, runtimeBytes(model), true, cpuOnly());
        const footprint = priced === null ? null : footprintAt(server.level, priced);
        return sum + (footprint === null ? 0 : footprint.deviceBytes + footprint.hostBytes);
      }, 0);
    const reviewSpare = (): void => {
      const sample = budget.current();
      supervisor.setSpareWanted(
        spareFits({ enabled: catalog.config().warmSpare, mode: sample?.mode ?? null, budgetBytes: sample?.totalBytes ?? 0, heldBytes: heldBytes(), spareBytes: spareBytes() }),
      );
    };

    const snapshotParts = {
      startedAt,
      endpoint,
      networkEndpoints: () => networkEndpointsFor?.(catalog.config().listen.allowedHosts) ?? [],
      networkListener: plan.network,
      catalog,
      controller,
      supervisor,
      activity,
      isPinned: (model: CatalogModel) => pinPolicy.isPinned(model),
      wanted: (id: string) => desired.wanted(id),
      engineOf: (model: CatalogModel) => engineFor(model, llamaServerPath),
      measuredBytes: (id: string) => measured.get(id) ?? null,
      runtimeBytes,
      weightsOnCpu: cpuOnly,
      spareBytes: () => (supervisor.spareStatus() === null ? null : spareBytes()),
      budget: () => budget.current(),
      limitBytes: () => catalog.config().budget.limitBytes ?? null,
      configPath,
      lostOutputs: () => outputs.lostOutputs(),
    } as const;
    const admin = new AdminService({
      buildSnapshot: () => buildSnapshot(snapshotParts),
      commands: createModelActions(
        {
          resolve: (id) => catalog.resolve(id),
          pins,
          activity,
          inFlight: (id) => supervisor.inFlight(id),
          controller,
          answersFor: (id) => catalog.models().filter((m) => m.id !== id && desired.wanted(m.id) && controller.servingModel(m.id) === id).map((m) => m.id),
        },
        pinPolicy,
      ),
      logs: (id) => supervisor.logTail(id),
      clock: realClock,
      warn: (message) => log.warn(message),
    });
    cleanups.push(() => admin.close());
    // A terminal or log file that went away is said once, on the snapshot (and on stderr when stdout went).
    cleanups.push(outputs.onLost((lost) => {
      log.warn(`the daemon's ${lost.stream} failed (${lost.code}: ${lost.message}); it is no longer written, serving goes on`);
      admin.changed();
    }));
    // Every engine's log lines onto the event stream as they are written (batched, rate-limited per model).
    const logFeed = new LogFeed({ clock: realClock, publish: (event) => admin.publish(event) });
    const unsubscribeLogs = supervisor.subscribeLog((modelId, line, position) => logFeed.append(modelId, line, position));
    cleanups.push(() => {
      unsubscribeLogs();
      logFeed.close();
    });
    // A loading engine's fraction onto the snapshot (the dashboard's card, the tray), at most twice a second, only while one changes.
    cleanups.push(feedLoadProgress({ supervisor, changed: () => admin.changed(), clock: realClock }));

    // Events → "look again" and "something changed".
    const controllerLog = logFor('events');
    spareChanged = () => {
      admin.changed();
      // Its measured size may not fit where the expected one did.
      reviewSpare();
    };
    controller.onEvent((event) => {
      admin.changed();
      reviewSpare();
      if (event.type === 'ModelQuarantined') admin.publish({ type: 'ModelQuarantined', modelId: event.modelId, reason: event.reason, at: event.at });
      if (event.type === 'ModelFellBack') admin.publish({ type: 'ModelFellBack', modelId: event.modelId, fallbackId: event.fallbackId, reason: event.reason, at: event.at });
    });
    activity.onChange(() => admin.changed());
    budget.onChange(() => {
      controller.trigger();
      admin.changed();
      reviewSpare();
    });
    catalog.onChanged(() => {
      controller.trigger();
      admin.changed();
      reviewSpare();
      // A reload may have changed the limit or reserve: the budget applies it now, not at the next (idle: slow) sample.
      budget.sampleNow().catch(() => undefined);
    });
    supervisor.subscribe((event) => {
      reviewSpare();
      // The first server of an idle daemon: back to the running cadence at once, not after the idle interval.
      if (event.type === 'ServerSpawned' && samplingIdle) sampleBudget();
      if (event.type === 'ServerExited' || event.type === 'ServerStopped') measured.delete(event.modelId);
      if (event.type === 'ServerExited' && event.wasReady) controllerLog.warn(`${event.modelId}'s server ended on its own (${event.kind}): ${event.reason}`);
    });

    const access: { listen: LlmtrayConfig['listen'] | null; rules: RouterAccess | null } = { listen: null, rules: null };
    const router = createRouter({
      gateway: createGateway({ catalog, controller, supervisor, activity, startedAt, turns }),
      activationWaitMs: config.activationWaitMs,
      fallthrough: createAdminHandler({ service: admin, token, staticDir: options.staticDir ?? defaultStaticDir() }),
      // llama.cpp router mode's /models/load and /models/unload: the tray's own commands, as the admin API runs them.
      modelCommands: {
        load: (id) => admin.runCommand({ id, command: 'load' }),
        unload: (id) => admin.runCommand({ id, command: 'unload' }),
      },
      // Read per request: a key removed from the config stops working at the next request.
      // Rebuilt only when the config's `listen` changes (a reload), not for every request.
      access: () => {
        const listen = catalog.config().listen;
        if (access.listen !== listen) {
          access.listen = listen;
          access.rules = { clientKeys: listen.clientKeys, keysRequired: plan.network, allowedHosts: listen.allowedHosts, corsOrigins: listen.corsOrigins, fallthroughFromNetwork: listen.admin === 'network' };
        }
        return access.rules as RouterAccess;
      },
    });
    cleanups.push(() => router.close());
    const listenOn = async (host: string, port: number): Promise<ListeningRouter> => {
      const listening = await router.listen({ host, port }).catch((error: unknown) => {
        throw (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
          ? new Error(portTakenMessage(face, { port, host, configPath }))
          : error;
      });
      cleanups.push(() => listening.close());
      return listening;
    };
    const port = (await listenOn(plan.host, options.port ?? config.listen.port)).port;
    // A specific network address does not take loopback connections: the CLI, the dashboard
    // and local apps get 127.0.0.1 on the same port.
    if (plan.loopbackToo) await listenOn('127.0.0.1', port);
    origin = localOrigin(plan, port);
    const dashboardUrl = `${origin}/#token=${token}`;
    const interfaces = Object.values(networkInterfaces()).flat().filter((a) => a !== undefined);
    networkEndpointsFor = (allowedHosts) => networkEndpoints(plan, port, allowedHosts, interfaces);
    const lanEndpoints = networkEndpointsFor(config.listen.allowedHosts);

    // The loop, the samplers and the watchers.
    const abort = new AbortController();
    const running = controller.run(abort.signal);
    reviewSpare();
    cleanups.push(async () => {
      abort.abort();
      await running;
    });
    const sampleBudget = (): void =>
      budget.start(() => {
        samplingIdle = !supervisor.hasServers();
        return samplingIdle ? Math.max(budgetIntervalMs, IDLE_BUDGET_INTERVAL_MS) : budgetIntervalMs;
      });
    sampleBudget();
    cleanups.push(() => budget.stop());

    const measureTimer = setInterval(() => {
      measureAll().catch((error: unknown) => log.warn(`measuring the model servers failed: ${errorMessage(error)}`));
    }, MEASURE_INTERVAL_MS);
    measureTimer.unref();
    cleanups.push(() => clearInterval(measureTimer));
    async function measureAll(): Promise<void> {
      for (const model of catalog.models()) {
        const at = supervisor.endpointFor(model.id);
        if (at === null) continue;
        const measurement = await supervisor.measured(model.id).catch(() => null);
        if (measurement === null) continue;
        if (measured.get(model.id) !== measurement.bytes) {
          measured.set(model.id, measurement.bytes);
          admin.changed();
        }
        // Learn only from a device figure (the driver's, or llama.cpp's buffers) at the full level
        // in GPU mode: RSS also holds the runtime and mapped file pages, which the budget does not
        // count, and an engine the driver does not list (on the CPU, in a container) has no other.
        // Only a model whole on one GPU, less its engine's runtime (daemon/learned-footprint.ts).
        const learned = footprintToLearn(measurement, { level: at.level, placement: controller.placement(model.id) }, { gpuMode: gpuMode(), runtimeBytes: runtimeBytes(model) });
        if (learned !== null) await catalog.learnFromMeasurement(model.id, learned).catch(() => undefined);
        if (cpuOnly() || at.level === 'minimal') await learnCpuBuffers(model);
      }
    }
    /** The first load wholly on the CPU of a model with matrix types this (build, CPU) has not seen teaches their extra buffers. */
    async function learnCpuBuffers(model: CatalogModel): Promise<void> {
      const key = cpuBufferKeyOf(model);
      const draft = model.draftId === undefined ? null : (catalog.resolve(model.draftId) ?? null);
      const lesson = cpuBufferLesson(model, draft, supervisor.modelBuffers(model.id));
      if (key === null || lesson === null || !cpuBuffers.teaches(key, lesson.bytesByType)) return;
      const learned = await cpuBuffers.learn(key, lesson.bytesByType, lesson.extra).catch((error: unknown) => {
        log.warn(`remembering the CPU's weight buffers failed: ${errorMessage(error)}`);
        return true;
      });
      if (!learned) return;
      log.info(`learned the CPU's extra weight buffers from '${model.id}': ${lesson.extra.buffers.join(', ') || 'none'} (${formatBytes(lesson.extra.bytes)})`);
      await catalog.reload();
    }

    if (demo === null) {
      const reloads = startCatalogReloads({
        catalog,
        configPath,
        log,
        isRunning: (modelId) => supervisor.endpointFor(modelId) !== null,
        // The catalog announces a changed model list only; a reload that changed only `listen`
        // (an endpoint, a key revoked) or the budget must reach an open dashboard and the tray
        // too, not wait for their next unrelated update.
        onApplied: () => admin.changed(),
      });
      cleanups.push(() => reloads.close());
    }

    await writeDaemonInfo(dataDir, { pid: process.pid, port, endpoint: endpoint(), origin, startedAt });
    cleanups.push(() => rm(join(dataDir, DAEMON_INFO_FILE), { force: true }));
    log.info(`serving ${catalog.models().length} model(s) at ${endpoint()}${lanEndpoints.length > 0 ? ` and on the network at ${lanEndpoints.join(', ')} (client keys required)` : ''}`);

    let stopping: Promise<void> | null = null;
    return {
      admin,
      endpoint: endpoint(),
      networkEndpoints: lanEndpoints,
      dashboardUrl,
      port,
      dataDir,
      configPath,
      stop: () => (stopping ??= stopAll()),
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** Whether models run in host RAM here (no GPU whose memory can be measured), from one probe. */
/** Where the engines' runtime will count, from one probe before the live budget runs: the demo sizes its limit with it. */
async function runtimePlaceAtStart(probe: GpuProbe): Promise<RuntimePlace> {
  const { gpus, host } = await probe.probe().catch(() => ({ gpus: [], host: { totalBytes: 0, availableBytes: 0 } }));
  const budget = computeBudget({ gpus, host, reserveBytes: 0, limitBytes: null, ourUsageByGpu: new Map(), platform: process.platform, unifiedShare: DEFAULT_BUDGET_CONFIG.unifiedShare });
  return budget.mode === 'gpu' ? 'device' : 'host';
}
