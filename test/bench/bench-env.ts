// What a benchmark reads from its environment, one way for every bench: how many rounds to run
// (a variable that shortens a run while iterating), and which llama-server to race against.
import { existsSync } from 'node:fs';
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
