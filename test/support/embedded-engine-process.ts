// The embedded engine as a real child process from dist/ (built by `npm test` first), with
// its stderr read as the supervisor reads it: the port from its listening line, readiness
// from its "model loaded" line. Shared by every test file that runs the engine bare.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { EMBEDDED_ENGINE_NODE_FLAGS } from '../../core/engine/supervisor/engine-command.js';

const MAIN = fileURLToPath(new URL('../../dist/core/engine/embedded/main.js', import.meta.url));
export interface Engine {
  child: ChildProcess;
  stderr: () => string;
  /** Resolves with the first stderr match of `pattern`; rejects if the process exits first. */
  waitFor: (pattern: RegExp) => Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startEngine(args: string[], addressSpaceLimit?: number): Engine {
  // The Node and the flags the supervisor starts it with (engine-command.ts).
  const argv = [process.execPath, ...EMBEDDED_ENGINE_NODE_FLAGS, MAIN, ...args];
  const [cmd, ...rest] = addressSpaceLimit ? ['prlimit', `--as=${addressSpaceLimit}`, ...argv] : argv;
  const child = spawn(cmd ?? process.execPath, rest, { stdio: ['ignore', 'ignore', 'pipe'] });
  let text = '';
  const listeners = new Set<() => void>();
  child.stderr?.on('data', (d: Buffer) => {
    text += d.toString();
    for (const l of listeners) l();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      // stderr may still hold the last lines when 'exit' fires; 'close' waits for them.
      child.on('close', () => resolve({ code, signal }));
    });
  });
  const waitFor = (pattern: RegExp) => new Promise<RegExpMatchArray>((resolve, reject) => {
    const check = () => {
      const m = text.match(pattern);
      if (m) {
        listeners.delete(check);
        resolve(m);
      }
    };
    listeners.add(check);
    check();
    void exited.then(() => {
      check();
      if (listeners.has(check)) reject(new Error(`engine exited before ${pattern}; stderr:\n${text}`));
    });
  });
  return { child, stderr: () => text, waitFor, exited };
}

export async function portOf(engine: Engine): Promise<number> {
  const m = await engine.waitFor(/main: HTTP server is listening, hostname: 127\.0\.0\.1, port: (\d+)/);
  return Number(m[1]);
}

export async function stopEngine(engine: Engine): Promise<void> {
  if (engine.child.exitCode === null && engine.child.signalCode === null) engine.child.kill('SIGTERM');
  await engine.exited;
}
