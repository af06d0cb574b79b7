// node-llama-cpp's CPU runtime, started without re-running its binding test when a kept
// verdict says the same binding already passed it on this machine (binding-verdict.ts).
//
// How: the first start goes through getLlama as always, and notes the binding getLlama loaded
// (its internal `Llama._create`, watched for that one call); the verdict is kept after the
// runtime is up. A later start with the verdict holding loads that binding and calls
// `Llama._create` with what getLlama itself would pass, the way getLlama's own "lastBuild"
// path does. Those are node-llama-cpp 3.21.1's internals (the version is pinned): if they are
// not found as expected, getLlama runs as before and the log says so, so an update of the
// library can make starts slower, never wrong. Nor is the test skipped where node-llama-cpp has
// a local build or a clone of llama.cpp: getLlama may then load another binding than the kept one.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { getLlama, Llama, type LlamaLogLevel } from 'node-llama-cpp';
import { errorMessage } from '../../../contracts/error-message.js';
import { thisCpu } from '../../../common/this-cpu.js';
import { currentEnvironment, keepVerdict, readVerdict, verdictFile, type TestedBinding } from './binding-verdict.js';

export interface CpuRuntimeOptions {
  maxThreads: number;
  logLevel: LlamaLogLevel;
  logger: (level: LlamaLogLevel, message: string) => void;
}

/** `Llama._create`'s options, as getLlama passes them (node-llama-cpp 3.21.1, dist/bindings/getLlama.js). */
interface CreateOptions extends CpuRuntimeOptions {
  bindings: unknown;
  bindingPath: string;
  extBackendsPath?: string;
  buildType: 'localBuild' | 'prebuilt';
  buildMetadata: unknown;
  vramPadding: unknown;
  ramPadding: unknown;
  skipLlamaInit: boolean;
  debug: boolean;
  numa: false;
  tempDir: false;
}
type CreateLlama = (options: CreateOptions) => Promise<Llama>;

interface Internals {
  llamaClass: { _create: CreateLlama };
  vramPadding: unknown;
  ramPadding: unknown;
  debug: boolean;
  /** Where node-llama-cpp's bindings may live: its package and the `@node-llama-cpp` scope beside it. */
  bindingHomes: string[];
  /** node-llama-cpp's version, from its package.json. */
  version: string;
  /** A local build or llama.cpp clone of node-llama-cpp's that getLlama would consider before a prebuilt binding, if any. */
  localBuild: string | undefined;
}

/** node-llama-cpp's internals this file needs, or why they are not there. */
async function findInternals(): Promise<Internals | string> {
  const llamaClass = Llama as unknown as { _create?: unknown };
  if (typeof llamaClass._create !== 'function') return 'Llama._create is not there';
  // The entry is <package>/dist/index.js; the modules below are the ones it already imported.
  const entry = createRequire(import.meta.url).resolve('node-llama-cpp');
  const packageDir = dirname(dirname(entry));
  const getLlamaModule = await import(new URL('./bindings/getLlama.js', pathToFileURL(entry)).href) as Record<string, unknown>;
  const config = await import(new URL('./config.js', pathToFileURL(entry)).href) as Record<string, unknown>;
  const { defaultLlamaVramPadding, defaultLlamaRamPadding } = getLlamaModule;
  if (typeof defaultLlamaVramPadding !== 'function' || typeof defaultLlamaRamPadding !== 'function') return 'its default paddings are not there';
  if (typeof config.defaultLlamaCppDebugMode !== 'boolean') return 'its debug default is not there';
  const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version?: unknown };
  if (typeof version !== 'string') return 'its package.json has no version';
  return {
    llamaClass: llamaClass as { _create: CreateLlama },
    vramPadding: defaultLlamaVramPadding,
    ramPadding: defaultLlamaRamPadding,
    debug: config.defaultLlamaCppDebugMode,
    bindingHomes: withUnpacked([packageDir, join(dirname(packageDir), '@node-llama-cpp')]),
    version,
    // Where node-llama-cpp 3.21.1 keeps them (its dist/config.js: llamaLocalBuildBinsDirectory, llamaCppDirectory).
    localBuild: [join(packageDir, 'llama', 'localBuilds'), join(packageDir, 'llama', 'llama.cpp')].find((path) => existsSync(path)),
  };
}

/**
 * The folders, and in the packaged app (the engine's JS inside resources/app.asar) their
 * counterparts in app.asar.unpacked, where electron-builder's asarUnpack puts the native files
 * node-llama-cpp loads (build/electron-builder.yml).
 */
function withUnpacked(folders: string[]): string[] {
  const packed = `${sep}app.asar${sep}`;
  return folders.flatMap((folder) => (folder.includes(packed) ? [folder, folder.replace(packed, `${sep}app.asar.unpacked${sep}`)] : [folder]));
}

function startWithTest(options: CpuRuntimeOptions): Promise<Llama> {
  return getLlama({ build: 'never', gpu: false, ...options });
}

/**
 * The CPU runtime, as `getLlama({build: 'never', gpu: false, ...options})` starts it, without
 * the binding test where a kept verdict holds. `note` gets one line saying which way it went.
 * Rejects as getLlama does.
 */
export async function startCpuRuntime(options: CpuRuntimeOptions, note: (line: string) => void): Promise<Llama> {
  const file = verdictFile();
  if (file === null) return startWithTest(options);
  const internals = await findInternals().catch((error: unknown) => `reading them failed (${errorMessage(error)})`);
  if (typeof internals === 'string') {
    note(`runtime: testing the binding as node-llama-cpp does: its internals differ from 3.21.1's (${internals})`);
    return startWithTest(options);
  }
  if (internals.localBuild !== undefined) {
    note(`runtime: testing the binding as node-llama-cpp does: it may choose its local build over the prebuilt one (${internals.localBuild})`);
    return startWithTest(options);
  }
  const environment = currentEnvironment(thisCpu(), `node-llama-cpp ${internals.version}`);
  const verdict = readVerdict(file, internals.bindingHomes, environment);
  if (!('unusable' in verdict)) {
    try {
      const llama = await startTested(internals, verdict, options);
      note(`runtime: loaded ${verdict.bindingPath} without its test: it passed on this machine (${file})`);
      return llama;
    } catch (error) {
      note(`runtime: loading ${verdict.bindingPath} without its test failed (${errorMessage(error)}); testing it as node-llama-cpp does`);
      return startWithTest(options);
    }
  }
  const loaded = await startWatchingCreate(internals.llamaClass, options);
  if (loaded.binding === undefined) {
    note(`runtime: tested the binding (no verdict: ${verdict.unusable}); not a prebuilt binding, so nothing kept`);
  } else {
    try {
      await keepVerdict(file, loaded.binding, environment);
      note(`runtime: tested the binding (no verdict: ${verdict.unusable}); verdict kept in ${file}`);
    } catch (error) {
      // Not in error words (failure-classifier.ts): a line of a healthy start, not a cause.
      note(`runtime: tested the binding (no verdict: ${verdict.unusable}); the verdict was not kept (${errorMessage(error)})`);
    }
  }
  return loaded.llama;
}

/** The runtime from a binding that passed its test, as getLlama's prebuilt path creates it after the test. */
async function startTested(internals: Internals, verdict: TestedBinding, options: CpuRuntimeOptions): Promise<Llama> {
  const bindings = createRequire(import.meta.url)(verdict.bindingPath) as unknown;
  return internals.llamaClass._create({
    ...options,
    bindings,
    bindingPath: verdict.bindingPath,
    ...(verdict.extBackendsPath === undefined ? {} : { extBackendsPath: verdict.extBackendsPath }),
    buildType: 'prebuilt',
    buildMetadata: verdict.buildMetadata,
    vramPadding: internals.vramPadding,
    ramPadding: internals.ramPadding,
    skipLlamaInit: false,
    debug: internals.debug,
    numa: false,
    tempDir: false,
  });
}

/** getLlama, noting the prebuilt binding it loads (it calls `Llama._create` once, after the test passed). */
async function startWatchingCreate(llamaClass: { _create: CreateLlama }, options: CpuRuntimeOptions): Promise<{ llama: Llama; binding?: TestedBinding }> {
  const create = llamaClass._create;
  let binding: TestedBinding | undefined;
  llamaClass._create = (createOptions) => {
    if (createOptions.buildType === 'prebuilt' && typeof createOptions.bindingPath === 'string') {
      binding = {
        bindingPath: createOptions.bindingPath,
        ...(createOptions.extBackendsPath === undefined ? {} : { extBackendsPath: createOptions.extBackendsPath }),
        buildMetadata: createOptions.buildMetadata,
      };
    }
    return create.call(llamaClass, createOptions);
  };
  try {
    const llama = await startWithTest(options);
    return binding === undefined ? { llama } : { llama, binding };
  } finally {
    llamaClass._create = create;
  }
}
