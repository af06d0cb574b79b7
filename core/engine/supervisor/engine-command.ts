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
 * Node's own flags for the embedded engine. `--disable-wasm-trap-handler` (Node 22.2 and
 * later): V8 otherwise reserves about 10 GB of address space for each WebAssembly instance as
 * guard regions, and Node 22's bundled HTTP client parses with WebAssembly once it loads; under
 * an address-space limit (`ulimit -v`, prlimit) the engine died of "Cannot allocate Wasm memory"
 * instead of saying that llama.cpp's allocation failed, a crash where it was out of memory. The
 * engine's own WebAssembly is only that parser, so the bounds checks it costs are nothing. A Node
 * that does not know the flag (20) gets none.
 */
export const EMBEDDED_ENGINE_NODE_FLAGS: readonly string[] = process.allowedNodeEnvironmentFlags.has('--disable-wasm-trap-handler')
  ? ['--disable-wasm-trap-handler']
  : [];

/**
 * The embedded engine under this very Node (process.execPath, so it runs inside Electron's
 * Node too). Throws when its entry is not built, saying so.
 */
export function embeddedEngineCommand(entry: string = embeddedEntryPath()): EngineCommand {
  if (!existsSync(entry)) throw new Error(`the embedded engine is not built: ${entry} is missing (run npm run build)`);
  return { command: process.execPath, args: [...EMBEDDED_ENGINE_NODE_FLAGS, entry], capabilities: EMBEDDED_CAPABILITIES };
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
