// One launch, run on its model owner's turn: the spec and the engine read, a port and a key
// chosen, the process started (or the warm spare adopted), and its load waited for until it is
// ready, fails, times out or is cancelled. A port another program took is retried here, on a
// fresh port; every other end is reported by the owner (model-owner.ts) and thrown.
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { errorMessage } from '../../contracts/error-message.js';
import { LaunchError } from '../failure-classifier.js';
import { argvFor, readsApiKeyFile, type LaunchSpec } from '../launch-spec.js';
import { placementEnv } from '../placement-args.js';
import { LlamaServerSlots } from '../llama-server/saved-slots.js';
import { llamaServerStagingDir } from '../saved-conversations/on-disk.js';
import type { LaunchLevel } from '../../contracts/launch-level.js';
import type { Placement } from '../../contracts/plan.js';
import { apiKeyDir, newApiKeyFilePath, removeApiKeyFile, writeApiKeyFile } from './api-key-file.js';
import { dataDirTrouble } from './data-dir-trouble.js';
import type { EngineCommand } from './engine-command.js';
import { commandLineHash } from './engine-registry.js';
import { freeLoopbackPort } from './free-port.js';
import { waitUntilReady } from './readiness.js';
import { probeServedApis } from './served-apis.js';
import { ServerProcess, type LaunchParts } from './server-process.js';
import { defaultLoadTimeoutMs } from './supervisor-types.js';
import type { AdoptedSpare } from './warm-spare.js';
import { cancelled, LOG_TAIL_LINES, type LaunchOwner } from './owner-port.js';

const PORT_ATTEMPTS = 3;

/** One launch command, run by the model's owner. */
export async function launchNow(owner: LaunchOwner, level: LaunchLevel, placement: Placement | undefined, cancel: AbortSignal): Promise<void> {
  const ctx = owner.ctx;
  cancel.throwIfAborted();
  const current = owner.server;
  if (current?.serving() === true && current.level === level) return;
  if (current?.running) await owner.stop(current, { why: 'requested' });
  let spec: LaunchSpec;
  let command: EngineCommand;
  try {
    spec = await ctx.deps.specFor(owner.modelId);
    command = await ctx.deps.engineCommand(spec);
  } catch (error) {
    throw owner.failedBeforeStart(level, placement, errorMessage(error));
  }
  for (let attempt = 1; ; attempt++) {
    cancel.throwIfAborted();
    const outcome = await startOnce(owner, spec, command, level, placement, cancel);
    if (outcome === 'ready') return;
    if (outcome !== 'port-taken') throw outcome;
    if (attempt >= PORT_ATTEMPTS) throw owner.failedBeforeStart(level, placement, `another program took its loopback port ${PORT_ATTEMPTS} times in a row`);
  }
}

/** Starts one process and waits for it. Resolves 'ready', 'port-taken' (try another port), or the error to throw. */
async function startOnce(
  owner: LaunchOwner,
  spec: LaunchSpec,
  command: EngineCommand,
  level: LaunchLevel,
  placement: Placement | undefined,
  cancel: AbortSignal,
): Promise<'ready' | 'port-taken' | Error> {
  const ctx = owner.ctx;
  const port = await freeLoopbackPort();
  const apiKey = randomBytes(24).toString('hex');
  // In a file where the build reads one, so that `ps` does not show it (see api-key-file.ts).
  const keyFile = readsApiKeyFile(command.capabilities) ? newApiKeyFilePath(apiKeyDir(ctx.deps.dataDir)) : null;
  let engineArgs: string[];
  try {
    engineArgs = argvFor(spec, level, command.capabilities, port, keyFile === null ? { key: apiKey } : { keyFile }, placement, ctx.deps.gpuIdentity);
  } catch (error) {
    return owner.failedBeforeStart(level, placement, errorMessage(error));
  }
  const args = [...command.args, ...engineArgs];
  // llama-server refuses a --slot-save-path that is not a folder already.
  if (spec.engine === 'llama-server' && spec.savedConversations !== undefined) {
    await mkdir(llamaServerStagingDir(spec.savedConversations.dir), { recursive: true }).catch((error: Error) =>
      owner.log.push(`── llmtray: could not make the folder for saved conversations: ${error.message}`),
    );
  }
  const env = { ...placementEnv(placement, spec.engine, ctx.deps.gpuIdentity), ...spec.env };
  if (keyFile !== null) {
    try {
      await writeApiKeyFile(keyFile, apiKey);
    } catch (error) {
      removeApiKeyFile(keyFile);
      const trouble = await dataDirTrouble(error, ctx.deps.dataDir);
      return owner.failedBeforeStart(level, placement, `${trouble === null ? '' : `${trouble}: `}could not write its API key file ${keyFile}: ${errorMessage(error)}`);
    }
  }
  let server: ServerProcess | null = null;
  const launchParts = (): LaunchParts => ({
    port,
    apiKey,
    level,
    placement,
    startedAt: ctx.clock.now(),
    onLine: (line: string) => owner.log.push(line),
    onBusyChange: (busy: boolean) => {
      if (server !== null) owner.busyChanged(server, spec, busy);
    },
    onTransition: (state, changed) => owner.transitioned(changed, state),
  });
  // The warm spare runs this launch when it can, as itself (same object, same pid); when it
  // cannot, it is ended first, so that the memory the plan counted as free is free
  // (warm-spare.ts). Only the spec's own environment must match: placement's variables choose
  // GPUs, and the spare runs only launches with every layer on the CPU, which start no GPU backend.
  const adopted: AdoptedSpare | null = ctx.spare?.adopt(command, spec.env, engineArgs, launchParts()) ?? null;
  if (adopted === null) await ctx.spare?.endNow();
  const commandText = [command.command, ...args].join(' ').replace(apiKey, '<key>');
  if (adopted === null) owner.log.push(`── llmtray: starting '${owner.modelId}' at level ${level}: ${commandText}`);
  else {
    // Its own start so far, in the model's log too: from now on its lines go there as they come.
    for (const line of adopted.server.tail.toArray()) owner.log.push(line);
    owner.log.push(`── llmtray: starting '${owner.modelId}' at level ${level} in the warm spare (pid ${adopted.server.pid}, started ${Math.round(adopted.ageMs)} ms before): ${commandText}`);
  }
  // The load's length is measured on the monotonic clock; startedAt (epoch) is what is shown and recorded.
  const launchedAt = ctx.clock.elapsed();
  try {
    server =
      adopted?.server ??
      // In the data dir, whatever the daemon's own working directory: a folder it was started
      // from may be deleted while it runs, and node-llama-cpp reads its working directory
      // at start (ENOENT … uv_cwd, once a model quarantined for it).
      ServerProcess.start({ spawn: ctx.spawn, command: command.command, args, env, cwd: ctx.deps.dataDir, platform: ctx.platform, engine: spec.engine, ...launchParts() });
    await server.spawned;
  } catch (error) {
    if (keyFile !== null) removeApiKeyFile(keyFile);
    return owner.failedBeforeStart(level, placement, `could not start ${command.command}: ${errorMessage(error)}`, server);
  }
  const started = server;
  owner.server = started;
  started.markSpawned(ctx.clock.now());
  // An adopted spare keeps the command line it was started with; that is what /proc shows.
  const commandHash = commandLineHash(started.commandLine);
  await ctx.registry.add({ modelId: owner.modelId, pid: started.pid, commandHash, startedAt: started.startedAt }).catch((error: Error) =>
    owner.log.push(`── llmtray: could not record pid ${started.pid} in engines.json (${error.message}); an orphan of this server would not be found`),
  );
  const loadTimeoutMs = (ctx.deps.loadTimeoutMs ?? defaultLoadTimeoutMs)(spec);
  // Registered before anything else awaits the exit, so the one report of how it ended is
  // made before the launch below rejects with it.
  void started.exited.then(() => owner.afterExit(started, keyFile, loadTimeoutMs));

  const waiting = new AbortController();
  const timer = ctx.clock.setTimeout(() => waiting.abort('timeout'), loadTimeoutMs);
  const onCancel = (): void => waiting.abort('cancelled');
  // The cancel may already have come while the process was starting: 'abort' fires only once.
  if (cancel.aborted) onCancel();
  else cancel.addEventListener('abort', onCancel, { once: true });
  void started.exited.then(() => waiting.abort('exited'));
  try {
    await waitUntilReady({
      port,
      apiKey,
      doorbell: started.doorbell,
      signal: waiting.signal,
      clock: ctx.clock,
      onProgress: (progress) => {
        if (started.noteLoadProgress(progress)) ctx.loadProgress(owner.modelId, progress);
      },
      provenReady: () => started.provenReady,
    });
    // Before 'ready', so the first request already knows how to reach it. The embedded engine
    // is ours and serves no /v1/messages (its README); asking it would cost every launch a round trip.
    const anthropicMessages = spec.engine !== 'embedded' && (await probeServedApis(port, apiKey)).anthropicMessages;
    // The probe awaited: a cancel, the load timeout or an exit meanwhile ends the load as it
    // would have a moment earlier. A process already gone whose output still drains is an exit.
    if (started.gone) waiting.abort('exited');
    waiting.signal.throwIfAborted();
    const kept = spec.savedConversations;
    let savedSlots: LlamaServerSlots | null = null;
    if (spec.engine === 'llama-server' && kept !== undefined && engineArgs.includes('--slot-save-path')) {
      savedSlots = await LlamaServerSlots.open({
        root: kept.dir, minTokens: kept.minTokens, budgetBytes: kept.budgetBytes,
        modelPath: spec.modelPath, buildVersion: command.capabilities.version, argv: engineArgs, port, apiKey,
        log: (line) => owner.log.push(line),
      });
      if (started.gone) waiting.abort('exited');
      waiting.signal.throwIfAborted();
    }
    if (anthropicMessages) owner.log.push(`── llmtray: '${owner.modelId}' serves Anthropic's /v1/messages itself; those requests go to it as they are`);
    // Before the transition, whose report (ServerReady) its listeners may read it by.
    owner.lastLoadMs = Math.round(ctx.clock.elapsed() - launchedAt);
    started.markReady(ctx.clock.now(), { anthropicMessages, toolCalls: command.capabilities.jinja !== 'absent', savedSlots });
    ctx.memory.learnRuntime(owner.modelId, spec, level, started, placement);
    return 'ready';
  } catch {
    const why = waiting.signal.reason as 'timeout' | 'cancelled' | 'exited';
    if (why === 'cancelled') {
      await owner.stop(started, { why: 'requested' });
      return cancel.reason instanceof Error || cancel.reason instanceof DOMException ? cancel.reason : cancelled(String(cancel.reason));
    }
    if (why === 'timeout') await owner.stop(started, { why: 'load-timeout' });
    await started.exited;
    const end = started.state;
    if (end.kind === 'exited' && end.portTaken) return 'port-taken';
    const failure = (end.kind === 'exited' ? end.failure : null) ?? { kind: 'crash', reason: 'it ended while loading' };
    const exit = end.kind === 'exited' ? end.exit : { exitCode: null, signal: null };
    return new LaunchError(owner.modelId, { ...failure, ...exit, logTail: started.tail.toArray().slice(-LOG_TAIL_LINES) });
  } finally {
    ctx.clock.clearTimeout(timer);
    cancel.removeEventListener('abort', onCancel);
  }
}
