// What a benchmark reads from its environment, one way for every bench: how many rounds to run
// (a variable that shortens a run while iterating), and which llama-server to race against.
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';

/** The whole number of rounds `name` asks for, or `fallback` when it is unset; anything else is refused by name. */
export function roundsFromEnv(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a whole number of rounds, at least 1; got '${value}'`);
  return n;
}

/** LLMTRAY_LLAMA_SERVER when it names a file, else the checkout's own build (npm run build:llama-server); null when neither is there. */
export function llamaServerPath(): string | null {
  const named = process.env.LLMTRAY_LLAMA_SERVER;
  if (named !== undefined && named !== '') return existsSync(named) ? named : null;
  const built = resolve('.llama-server', 'build', 'bin', 'llama-server');
  return existsSync(built) ? built : null;
}

/** The one-minute load average, and whether it counts as a quiet machine (under 0.5, issue 41's line). */
export function machineLoad(): { load: number; quiet: boolean; label: string } {
  const load = loadavg()[0] ?? 0;
  const quiet = load < 0.5;
  return { load, quiet, label: `${quiet ? 'quiet' : 'loaded'}, load ${load.toFixed(2)}` };
}

/**
 * With LLMTRAY_BENCH_QUIET=1, waits (at most LLMTRAY_BENCH_QUIET_WAIT_S, default 300 s) for the
 * one-minute load to fall under 0.5 before a measurement, so a run can give quiet figures on a
 * machine its own previous benchmark just loaded. Without it, returns at once: each figure is
 * labelled with the load it ran under either way.
 */
export async function waitForQuietIfAsked(log: (line: string) => void = console.log): Promise<void> {
  if (process.env.LLMTRAY_BENCH_QUIET !== '1') return;
  const limitS = roundsFromEnv('LLMTRAY_BENCH_QUIET_WAIT_S', 300);
  const started = Date.now();
  while (!machineLoad().quiet && Date.now() - started < limitS * 1000) await new Promise((resolve) => setTimeout(resolve, 5000));
  log(`(waited ${((Date.now() - started) / 1000).toFixed(0)} s for a quiet machine: ${machineLoad().label})`);
}
