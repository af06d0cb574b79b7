// The files a configured model names: its model file (whose identity, size and mtime, goes into
// its definition, so a re-download is a new one), and the vision projector its own arguments
// name. Apart from the catalog's assembly because each is read from the disk or the person's
// words once per model, and is the same whichever way the catalog then prices it.
import { realpath, stat } from 'node:fs/promises';
import type { FileIdentity } from './definition-hash.js';

/** A configured model file as the catalog keeps it: its identity, or why it cannot be used. */
export interface ConfiguredFile {
  file: FileIdentity | null;
  realPath: string | null;
  fileError: string | null;
}

export async function fileIdentity(path: string): Promise<ConfiguredFile> {
  try {
    const info = await stat(path);
    if (!info.isFile()) return { file: null, realPath: null, fileError: `${path}: expected a .gguf file, found a folder` };
    const real = await realpath(path);
    return { file: { path: real, sizeBytes: info.size, mtimeMs: info.mtimeMs }, realPath: real, fileError: null };
  } catch (error) {
    return { file: null, realPath: null, fileError: `${path}: cannot read the model file: ${(error as Error).message}` };
  }
}

/**
 * A projector the person passes in `args` (or llama-server's `engineArgs`: only it has --mmproj) wins
 * over the folder's; `--no-mmproj` means none (null); undefined when the args say nothing.
 */
export function projectorFromArgs(args: readonly string[]): string | null | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--no-mmproj') return null;
    if (arg === '--mmproj' || arg === '-mm') return args[i + 1];
    if (arg.startsWith('--mmproj=')) return arg.slice('--mmproj='.length);
  }
  return undefined;
}
