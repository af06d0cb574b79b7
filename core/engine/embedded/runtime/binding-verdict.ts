// The kept verdict of node-llama-cpp's binding test, so an engine start on the same machine does
// not fork the test again.
//
// Why: on Linux node-llama-cpp forks a Node process that loads its prebuilt binding before
// every load in the parent (so an incompatible binary crashes the child, not the app). Each
// fork is a Node start plus the binding's load: 0.4 s of wall clock and half a CPU-second
// measured on a 2-core EPYC, in every engine start, warm spares included, and the same answer
// every time as long as nothing it depends on changed. The verdict is kept with what it
// depends on (the binding and every library beside it, node-llama-cpp's version, the CPU's
// flags, which decide the ggml CPU variant the binding loads, the kernel, glibc, Node's ABI, the
// library search path); any change and the test runs again. Only a passed test is kept; a
// failed one is node-llama-cpp's to report.
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative, isAbsolute, sep } from 'node:path';
import { writeFileAtomic } from '../../../common/atomic-file.js';

/** A binding that passed the test, as node-llama-cpp's loader found it. */
export interface TestedBinding {
  bindingPath: string;
  extBackendsPath?: string;
  /** node-llama-cpp's build metadata of the binding (its `_nlcBuildMetadata.json`, as read). */
  buildMetadata: unknown;
}

/** What, besides the binding's files, decides whether it loads. */
export interface BindingEnvironment {
  /** node-llama-cpp's version: its JS chooses and drives the binding. */
  library: string;
  cpu: string;
  kernel: string;
  glibc: string;
  /** Node's version, module ABI and architecture. */
  node: string;
  /** LD_LIBRARY_PATH and LD_PRELOAD: they change which libraries the binding links to. */
  libraryPath: string;
}

const FORMAT = 1;

/**
 * Where the verdict is kept: the user's cache folder (XDG_CACHE_HOME, else ~/.cache), in
 * llmtray's own folder; null off Linux, where node-llama-cpp does not test prebuilt bindings.
 */
export function verdictFile(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform, home = homedir()): string | null {
  if (platform !== 'linux') return null;
  const cache = env.XDG_CACHE_HOME !== undefined && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(home, '.cache');
  return join(cache, 'llmtray', 'cpu-binding-verdict.json');
}

function fileIdentity(path: string): string {
  const s = statSync(path);
  return `${path}:${s.size}:${s.mtimeMs}:${s.ino}`;
}

/** A file, or a folder and every entry in it (not deeper), sorted. */
function identities(path: string): string[] {
  if (!statSync(path).isDirectory()) return [fileIdentity(path)];
  return [fileIdentity(path), ...readdirSync(path).sort().map((name) => fileIdentity(join(path, name)))];
}

/**
 * The verdict's key: the binding's folder (the binding and the ggml libraries it loads, one per
 * CPU variant, beside it) and its backends folder, each file by path, size, modification time
 * and inode (an npm install or update replaces them), and the environment. Throws when a file
 * is gone.
 */
export function verdictKey(binding: Pick<TestedBinding, 'bindingPath' | 'extBackendsPath'>, environment: BindingEnvironment): string {
  const folders = [dirname(binding.bindingPath), ...(binding.extBackendsPath === undefined ? [] : [binding.extBackendsPath])];
  const { library, cpu, kernel, glibc, node, libraryPath } = environment;
  return JSON.stringify({ binding: fileIdentity(binding.bindingPath), files: folders.flatMap(identities), library, cpu, kernel, glibc, node, libraryPath });
}

/** This process's BindingEnvironment. About 5 ms (Node's report is how glibc's version is read). */
export function currentEnvironment(cpu: string, library: string): BindingEnvironment {
  // excludeNetwork (Node ≥ 20.13, not in @types/node 20's ProcessReport) skips the report's
  // socket listing, most of its cost.
  const report = process.report as NodeJS.ProcessReport & { excludeNetwork?: boolean };
  const excluded = report.excludeNetwork;
  if (typeof excluded === 'boolean') report.excludeNetwork = true;
  let header: { osRelease?: string; glibcVersionRuntime?: string } = {};
  try {
    header = (report.getReport() as { header?: typeof header }).header ?? {};
  } finally {
    if (typeof excluded === 'boolean') report.excludeNetwork = excluded;
  }
  return {
    library,
    cpu,
    kernel: header.osRelease ?? 'unknown',
    glibc: header.glibcVersionRuntime ?? 'none',
    node: `${process.versions.node} abi ${process.versions.modules} ${process.arch}`,
    libraryPath: `${process.env.LD_LIBRARY_PATH ?? ''}|${process.env.LD_PRELOAD ?? ''}`,
  };
}

function inside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

/**
 * The kept binding when the verdict holds for `environment`, else why not (in words, for the
 * engine's log). A binding is only taken from `bindingHomes` (node-llama-cpp's package and its
 * `@node-llama-cpp` prebuilt packages beside it): the file is code this process will load.
 */
export function readVerdict(file: string, bindingHomes: readonly string[], environment: BindingEnvironment): TestedBinding | { unusable: string } {
  let kept: { format?: unknown; key?: unknown; binding?: Partial<TestedBinding> };
  try {
    kept = JSON.parse(readFileSync(file, 'utf8')) as typeof kept;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { unusable: code === 'ENOENT' ? 'none kept yet' : `${file} is unreadable (${code ?? 'not JSON'})` };
  }
  const binding = kept.binding;
  if (kept.format !== FORMAT || typeof kept.key !== 'string' || typeof binding?.bindingPath !== 'string' || binding.buildMetadata === undefined
    || (binding.extBackendsPath !== undefined && typeof binding.extBackendsPath !== 'string')) {
    return { unusable: `${file} is not a verdict this version keeps` };
  }
  const paths = [binding.bindingPath, ...(binding.extBackendsPath === undefined ? [] : [binding.extBackendsPath])];
  const stray = paths.find((path) => !bindingHomes.some((home) => inside(home, path)));
  if (stray !== undefined) return { unusable: `its binding ${stray} is outside node-llama-cpp's packages` };
  const tested = { bindingPath: binding.bindingPath, extBackendsPath: binding.extBackendsPath, buildMetadata: binding.buildMetadata };
  let key: string;
  try {
    key = verdictKey(tested, environment);
  } catch (error) {
    return { unusable: `its binding is gone (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})` };
  }
  return key === kept.key ? tested : { unusable: 'the binding, node-llama-cpp, the CPU, the kernel, glibc or Node changed since it was tested' };
}

/** Keeps a passed test's verdict; atomic, so concurrent engine starts read a whole file. */
export async function keepVerdict(file: string, binding: TestedBinding, environment: BindingEnvironment): Promise<void> {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const content = JSON.stringify({ format: FORMAT, key: verdictKey(binding, environment), binding }, null, 1);
  await writeFileAtomic(file, content);
}
