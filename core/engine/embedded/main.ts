#!/usr/bin/env node
// The embedded engine: a llama-server-compatible model server built on node-llama-cpp.
// `node dist/core/engine/embedded/main.js -m model.gguf -c 2048 --port 0 --api-key-file KEY_FILE`
// `node dist/core/engine/embedded/main.js --spare --spare-of DATA_DIR --spare-id ID` (the launch argv, later, on stdin: spare-mode.ts)
//
// Lifecycle, as llama-server's: listen at once (/health answers 503 with progress), load,
// print the ready lines, serve; exit 1 with llama.cpp's own cause on stderr when the load
// fails; exit 0 on SIGTERM/SIGINT. See README.md beside this file for the log lines.
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import type { Llama } from 'node-llama-cpp';
import { apiKeyOf, parseEngineArgs, USAGE, UsageError, usesGpu, type EngineOptions } from './cli-args.js';
import { EmbeddingService } from './embeddings.js';
import { createEngineLog, type EngineLog } from './engine-log.js';
import { createEngineServer, type EnginePhase } from './http-server.js';
import { runAsSpare } from './spare-mode.js';

/** How long a SIGTERM waits for conversation saves in flight (saved-slots.ts) before exiting. */
const SAVES_AT_STOP_MS = 3000;

async function exitAfterLog(log: EngineLog, code: number): Promise<never> {
  await log.settle();
  process.exit(code);
}

async function serve(opts: EngineOptions, apiKey: string | undefined, log: EngineLog, runtime?: Promise<Llama>): Promise<void> {
  let phase: EnginePhase = { phase: 'loading', progress: 0 };
  const server = createEngineServer({ apiKey, phase: () => phase, log: (l) => log.line(l) });

  let stopping = false;
  const stop = (signal: string): void => {
    // Every signal is heard, the first acted on: with no listener left (process.once), a second
    // one would end the process by default, cutting a save in flight short. The supervisor's
    // SIGKILL after its grace is what forces an engine that does not stop.
    if (stopping) return;
    stopping = true;
    log.line(`srv    operator(): ${signal} received, cleaning up before exit...`);
    server.close();
    server.closeAllConnections();
    // Well inside the supervisor's 5 s before SIGKILL: a save half written is worth nothing.
    const saves = phase.phase === 'ready' ? phase.engine.savedSlots?.settle(SAVES_AT_STOP_MS) : undefined;
    void (saves ?? Promise.resolve()).finally(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  server.on('error', (error) => {
    log.line(`main: couldn't bind HTTP server socket, hostname: ${opts.host}, port: ${opts.port}: ${error.message}`);
    void exitAfterLog(log, 1);
  });
  await new Promise<void>((resolve) => server.listen(opts.port, opts.host, resolve));
  const port = (server.address() as AddressInfo).port;
  log.line(`main: HTTP server is listening, hostname: ${opts.host}, port: ${port}`);

  const started = performance.now();
  try {
    // Imported only now: loading node-llama-cpp takes ~0.3 s, and /health should answer first.
    const { loadEngine } = await import('./model-loader.js');
    const engine = await loadEngine(opts, log, (fraction) => {
      if (phase.phase === 'loading') phase = { phase: 'loading', progress: Math.round(fraction * 1000) / 1000 };
    }, runtime);
    phase = {
      phase: 'ready',
      engine: { ...engine, createdAt: Date.now(), embeddings: new EmbeddingService(engine.model, engine.modelName, engine.contextPerSlot, engine.threads) },
    };
  } catch (error) {
    const e = error as Error;
    log.line(`srv    load_model: failed to load model, '${opts.modelPath}': ${e.name}: ${e.message}`);
    log.line('srv  llama_server: exiting due to model loading error');
    await exitAfterLog(log, 1);
  }
  log.line(`srv    load_model: loaded in ${((performance.now() - started) / 1000).toFixed(2)} s`);
  // Only after `phase` is ready, in the same synchronous step: the supervisor takes this line
  // as proof that /health answers 200 (readiness.ts, EMBEDDED_READY_LINE).
  log.line('srv  llama_server: model loaded');
  log.line(`main: server is listening on http://${opts.host}:${port} - starting the main loop`);
}

/** Parses a launch's argv and serves it; a usage error exits 1 with the usage. */
function launch(argv: readonly string[], log: EngineLog, runtime?: Promise<Llama>): void {
  let options: EngineOptions;
  let apiKey: string | undefined;
  try {
    options = parseEngineArgs(argv);
    apiKey = apiKeyOf(options, (path) => readFileSync(path, 'utf8'));
    // A spare started a CPU runtime (spare-mode.ts); layers on a GPU need another.
    if (runtime !== undefined && usesGpu(options)) throw new UsageError('a warm spare runs the CPU backend only; this launch puts layers on a GPU (-ngl/-ngld not 0)');
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    log.line(`error: ${error.message}`);
    log.line(USAGE);
    process.exit(1);
  }
  void serve(options, apiKey, log, runtime);
}

const log = createEngineLog();
process.on('unhandledRejection', (reason) => {
  log.line(`srv  llama_server: unexpected error: ${reason instanceof Error ? reason.stack : String(reason)}`);
  void exitAfterLog(log, 1);
});
const argv = process.argv.slice(2);
if (argv[0] === '--spare') {
  // The rest (--spare-of DATA_DIR --spare-id ID) only names the spare's owner and makes its
  // command line its own, for the supervisor's record of its servers.
  void runAsSpare(log, (launchArgv, runtime) => launch(launchArgv, log, runtime));
} else {
  launch(argv, log);
}
