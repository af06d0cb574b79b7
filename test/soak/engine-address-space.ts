// The address space the embedded engine holds on the Node that runs this process, measured: the
// base that a test's `prlimit --as` is set from, so that its out-of-memory premises (this context
// misses the limit, that one clears it) hold on every Node the suite runs on.
//
// Why measured and not a constant: the engine's address space is mostly reservations, and they
// move with Node. Measured here (VmPeak, node-llama-cpp 3.21.1, CPU, one thread, once loaded):
// demo-tiny @2048 1.43 GB on Node 20.20 and 1.83 GB on Node 24.22; demo-chat @65536 2.03 GB and
// 2.46 GB. A limit fixed at 2.32 GB from the Node 20 figures had every chat model run out of
// memory at 'full' on Node 24, so both ran at 'smaller-context' side by side and the short soak's
// traffic never swapped (it had not finished after 15 minutes). What a larger context adds
// above the base barely moves (+0.59 GB and +0.63 GB for demo-chat @65536 over demo-tiny).
import { spawn } from 'node:child_process';
import { embeddedEngineCommand } from '../../core/engine/supervisor/engine-command.js';
import { EMBEDDED_READY_LINE } from '../../core/engine/supervisor/readiness.js';
import { peakAddressSpaceBytes } from './proc.js';

/** How long the probe's load may take: seconds idle, far longer on a loaded 2-core machine. */
const LOAD_TIMEOUT_MS = 120_000;

/**
 * The peak address space, bytes, of the embedded engine under this very Node with `modelPath`
 * loaded at `contextTokens` on the CPU with one thread (as the daemon launches it on a small
 * machine). The engine is ended before this resolves.
 */
export async function embeddedEngineAddressSpace(modelPath: string, contextTokens: number): Promise<number> {
  const engine = embeddedEngineCommand();
  const child = spawn(engine.command, [...engine.args, '-m', modelPath, '-c', String(contextTokens), '-t', '1', '-ngl', '0', '--port', '0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((done) => child.once('close', () => done()));
  let log = '';
  try {
    await new Promise<void>((loaded, failed) => {
      const timer = setTimeout(() => failed(new Error(`the embedded engine did not load ${modelPath} within ${LOAD_TIMEOUT_MS / 1000} s; stderr:\n${log}`)), LOAD_TIMEOUT_MS);
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        log += chunk;
        if (log.split('\n').some((line) => EMBEDDED_READY_LINE.test(line))) {
          clearTimeout(timer);
          loaded();
        }
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        failed(new Error(`the embedded engine exited (${signal ?? code}) before it loaded ${modelPath}; stderr:\n${log}`));
      });
    });
    if (child.pid === undefined) throw new Error('the embedded engine has no pid');
    return peakAddressSpaceBytes(child.pid);
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}
