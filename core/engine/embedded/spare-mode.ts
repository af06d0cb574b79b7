// The embedded engine as a warm spare: its runtime started, no model, waiting to be adopted.
// `node main.js --spare --spare-of DATA_DIR --spare-id ID`, then one line on stdin: the launch's argv as a JSON
// array of strings, exactly what a fresh engine would get on its command line.
//
// Why: most of the embedded engine's cold start is not the model. Node starts, node-llama-cpp
// is imported (~40 MB of JavaScript), its binding is tested in a child process and loaded, and
// the backend is initialised, all before the first byte of the GGUF is read; on the 2-core
// project machine that was most of a second of a 1 s cold request, where llama-server needs
// 0.1 s for the same. A spare does all of that ahead, so a launch that adopts it pays only
// for its model (the supervisor keeps one: core/engine/supervisor/warm-spare.ts).
//
// Why stdin and not a port: only the parent that spawned the spare can write to it, so the
// launch (its model path and API key file) needs no key of its own, and a spare whose parent
// died sees its stdin end and exits at once instead of lingering as an orphan.
//
// A spare starts a CPU runtime only: a GPU backend holds a context on the device, whose size
// the budget would have to count per GPU (not measured on this project's machines yet), so
// the supervisor keeps a spare only where models run on the CPU. A launch that puts layers
// on a GPU is refused by name (exit 1), never served half on the wrong backend.
import type { Llama } from 'node-llama-cpp';
import { createInterface } from 'node:readline';
import type { EngineLog } from './engine-log.js';
import { errorMessage } from '../../contracts/error-message.js';

/** The spare's runtime: one CPU thread until a launch says how many (model-loader.ts sets them). */
const SPARE_RUNTIME = { gpu: false, threads: 1 } as const;

/**
 * Runs the spare: starts the runtime at once and hands it, with the argv that arrives on stdin,
 * to `launch`. Exits 0 when stdin ends first (whoever could adopt it is gone) or on
 * SIGTERM/SIGINT while waiting; exits 1 when the runtime cannot start (the supervisor replaces
 * the spare) or the line is not an argv. Blocks for the spare's life.
 */
export async function runAsSpare(log: EngineLog, launch: (argv: string[], runtime: Promise<Llama>) => void): Promise<void> {
  const leave = (): never => process.exit(0);
  process.once('SIGTERM', leave);
  process.once('SIGINT', leave);
  log.line('spare: starting the runtime (node-llama-cpp, CPU backend), no model yet');

  const runtime = (async () => {
    const { startRuntime } = await import('./model-loader.js');
    const { warmTemplateEngine } = await import('./chat-wrapper.js');
    const llama = await startRuntime(SPARE_RUNTIME, log);
    warmTemplateEngine();
    return llama;
  })();
  let adopted = false;
  runtime.then(
    () => {
      // Said either way: whether the launch waited for the runtime or the runtime for the launch shows in the log.
      log.line(adopted ? 'spare: runtime ready; loading the launch that came meanwhile' : 'spare: runtime ready; waiting for a launch on stdin');
    },
    async (error: unknown) => {
      // Adopted or not, the runtime is gone; a launch that adopted it reports the cause as its load failure.
      if (adopted) return;
      log.line(`spare: the runtime could not start: ${errorMessage(error)}`);
      await log.settle();
      process.exit(1);
    },
  );

  const argv = await firstLine(process.stdin);
  if (argv === null) {
    log.line('spare: stdin ended before a launch came (its supervisor is gone); exiting');
    leave();
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(argv ?? '');
  } catch {
    parsed = null;
  }
  if (!Array.isArray(parsed) || !parsed.every((a): a is string => typeof a === 'string')) {
    log.line('error: a spare expects one line on stdin: the launch argv as a JSON array of strings');
    await log.settle(0);
    process.exit(1);
  }
  adopted = true;
  process.off('SIGTERM', leave);
  process.off('SIGINT', leave);
  log.line('spare: adopted by a launch');
  launch(parsed, runtime);
}

/** The first line of `stream`, or null when it ends without one. Stops reading after it. */
function firstLine(stream: NodeJS.ReadableStream): Promise<string | null> {
  return new Promise((resolve) => {
    const lines = createInterface({ input: stream, crlfDelay: Infinity });
    let done = false;
    lines.once('line', (line) => {
      done = true;
      lines.close();
      resolve(line);
    });
    lines.once('close', () => {
      if (!done) resolve(null);
    });
  });
}
