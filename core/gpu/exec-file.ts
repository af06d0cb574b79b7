// Runs a driver tool (nvidia-smi, ps) and hands back its stdout: the one effect the usage
// queries need, injected so their tests run scripted answers instead of a GPU.
import { execFile } from 'node:child_process';

/**
 * Runs `file` with `args` (no shell) and resolves with stdout. Rejects when the tool is
 * missing, exits non-zero, or runs past the timeout; the error's message names the command, and
 * a ToolFailed error carries what the tool printed (nvidia-smi prints the cards it reached and a
 * line per card it could not, then exits non-zero).
 */
export type ExecFileText = (file: string, args: readonly string[]) => Promise<string>;

/**
 * Why a timeout: nvidia-smi can hang for many seconds when the driver is wedged (a known
 * failure after Xid errors), and a sampler stuck on it would freeze the live budget.
 */
export const EXEC_TIMEOUT_MS = 5_000;

/** A tool that ran and failed, with what it printed. */
export class ToolFailed extends Error {
  constructor(
    message: string,
    readonly stdout: string,
    readonly stderr: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ToolFailed';
  }
}

/**
 * An ExecFileText that gives up after `timeoutMs` (llama-server's device listing initialises
 * every backend, which takes longer than a driver query), run with `env` when given (the
 * engines' environment, so a listing sees the devices the engines will see).
 */
export function execFileTextWithin(timeoutMs: number, env?: NodeJS.ProcessEnv): ExecFileText {
  return (file, args) =>
    new Promise((resolve, reject) => {
      execFile(file, [...args], { timeout: timeoutMs, windowsHide: true, maxBuffer: 4 * 1024 * 1024, ...(env === undefined ? {} : { env }) }, (error, stdout, stderr) => {
        // Some tools say why on stdout (nvidia-smi: "Failed to initialize NVML: …"), which error.message leaves out.
        const printed = String(stdout).trim().split(/\r?\n/)[0] ?? '';
        if (error) reject(new ToolFailed(`${file} ${args.join(' ')} failed: ${error.message.trim()}${printed === '' ? '' : ` (it printed "${printed}")`}`, String(stdout), String(stderr), { cause: error }));
        else resolve(stdout);
      });
    });
}

export const execFileText: ExecFileText = execFileTextWithin(EXEC_TIMEOUT_MS);
