// Which program runs a launch spec, and what that program accepts.
import { existsSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EMBEDDED_CAPABILITIES, type LaunchSpec } from '../launch-spec.js';
import { probeCapabilities, type EngineCapabilities } from '../llama-server/capabilities.js';

export interface EngineCommand {
  /** The executable. */
  command: string;
  /** Arguments before the engine's own (e.g. the embedded engine's script path). */
  args: string[];
  capabilities: EngineCapabilities;
}

/**
 * The embedded engine's entry script. It exists only after `npm run build`; from the sources
 * (vitest) this still points at dist/, because node cannot run the TypeScript entry itself.
 */
export function embeddedEntryPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  if (here.includes(`${sep}dist${sep}`)) return resolve(here, '..', 'embedded', 'main.js');
  return join(resolve(here, '..', '..', '..'), 'dist', 'core', 'engine', 'embedded', 'main.js');
}

/**
 * The embedded engine under this very Node (process.execPath, so it runs inside Electron's
 * Node too). Throws when its entry is not built, saying so.
 */
export function embeddedEngineCommand(entry: string = embeddedEntryPath()): EngineCommand {
  if (!existsSync(entry)) throw new Error(`the embedded engine is not built: ${entry} is missing (run npm run build)`);
  return { command: process.execPath, args: [entry], capabilities: EMBEDDED_CAPABILITIES };
}

/**
 * The production engineCommand: the embedded engine (embeddedEngineCommand), llama-server from
 * the path discovery found.
 * Rejects when a spec asks for llama-server and none was found, or the embedded entry is not
 * built, saying which.
 */
export function defaultEngineCommand(options: {
  llamaServerPath: string | null;
  embeddedEntry?: string;
}): (spec: LaunchSpec) => Promise<EngineCommand> {
  const entry = options.embeddedEntry ?? embeddedEntryPath();
  return async (spec) => {
    if (spec.engine === 'embedded') return embeddedEngineCommand(entry);
    if (options.llamaServerPath === null) {
      throw new Error(`'${spec.modelId}' asks for llama-server, but none was found; set engines.llamaServer in the config or use engine: embedded`);
    }
    return { command: options.llamaServerPath, args: [], capabilities: await probeCapabilities(options.llamaServerPath) };
  };
}
