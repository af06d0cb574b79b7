// Start-up step: find the engines and open the catalog that prices models for them.
//
// Together because each needs the other: the catalog prices a model's weights on the CPU with the
// extra buffers learned per (engine build, CPU), and which engine a model runs on, and its build,
// are known only once the llama-server is found, which the config names. So the catalog opens
// pricing with the embedded engine's build alone, and reloads once the llama-server's is known.
import { join } from 'node:path';
import { Catalog, type CatalogModel } from '../catalog/catalog.js';
import { cpuBufferPrior } from '../catalog/cpu-buffer-prior.js';
import { CPU_BUFFERS_FILE_NAME, CpuBufferStore, cpuBufferKey, type CpuBufferRatios } from '../catalog/cpu-buffers.js';
import type { PlatformFacts } from '../catalog/paths.js';
import type { Log } from '../controller/effects.js';
import type { LaunchSpec } from '../engine/launch-spec.js';
import { probeCapabilities } from '../engine/llama-server/capabilities.js';
import { findLlamaServer, type LlamaServerSearch } from '../engine/llama-server/find-binary.js';
import { embeddedEngineBuild } from './memory/cpu-buffer-learning.js';
import { thisCpu, thisCpuFeatures } from '../common/this-cpu.js';
import { engineFor } from './launch-specs.js';

export interface EnginesAndCatalog {
  catalog: Catalog;
  cpuBuffers: CpuBufferStore;
  /** The llama-server found, or why none was. */
  llamaServer: LlamaServerSearch;
  llamaServerPath: string | null;
  /** The engine a model runs on here. */
  engineOf(model: Pick<CatalogModel, 'engine'>): LaunchSpec['engine'];
  /** This CPU's prior for its extra weight buffers (cpu-buffer-prior.ts). */
  cpuBufferPrior: CpuBufferRatios;
  /** The key its CPU buffers are learned under (engine build, CPU); null while its build is unknown. */
  cpuBufferKeyOf(model: Pick<CatalogModel, 'engine'>): string | null;
  /** Whether its engine keeps a mixture of experts' expert tensors on the CPU (a llama-server with --n-cpu-moe). */
  keepsExpertsOnCpu(model: CatalogModel): boolean;
}

export async function openEnginesAndCatalog(deps: { configPath: string; dataDir: string; facts: PlatformFacts; log: Log }): Promise<EnginesAndCatalog> {
  const { log } = deps;
  const cpuBuffers = await CpuBufferStore.open(join(deps.dataDir, CPU_BUFFERS_FILE_NAME));
  const cpu = thisCpu();
  const prior = cpuBufferPrior(thisCpuFeatures());
  const engineBuilds: Record<LaunchSpec['engine'], string | null> = { embedded: embeddedEngineBuild(), 'llama-server': null };
  let llamaServerPath: string | null = null;
  const engineOf = (model: Pick<CatalogModel, 'engine'>): LaunchSpec['engine'] => engineFor(model, llamaServerPath);
  const cpuBufferKeyOf = (model: Pick<CatalogModel, 'engine'>): string | null => {
    const build = engineBuilds[engineOf(model)] ?? null;
    return build === null ? null : cpuBufferKey(build, cpu);
  };
  const catalog = await Catalog.open({
    configPath: deps.configPath,
    dataDir: deps.dataDir,
    facts: deps.facts,
    cpuBufferRatios: (model) => {
      const key = cpuBufferKeyOf(model);
      return key === null ? {} : cpuBuffers.ratios(key);
    },
    // Until a load has taught a type's ratio: what this CPU's flags allow, so a first load is not priced short.
    cpuBufferPrior: prior,
    // Until the llama-server is found, `auto` is priced for the embedded engine (the larger
    // compute buffer); the reload below reprices it for llama-server once one is.
    engineOf,
  });
  const configured = catalog.config().llamaServerPath;
  const llamaServer = await findLlamaServer(configured === undefined ? {} : { configured });
  if (llamaServer.found) {
    llamaServerPath = llamaServer.path;
    const version = await probeCapabilities(llamaServer.path).then((c) => c.version, () => null);
    engineBuilds['llama-server'] = `llama-server ${version ?? llamaServer.path}`;
    await catalog.reload();
  }
  if (llamaServer.found) log.info(`llama-server: ${llamaServer.path} (${llamaServer.source})`);
  // A configured one that is missing is the person's mistake to fix: said with its path, as a warning.
  else if (configured !== undefined) log.warn(`${llamaServer.reason}; until then, models with engine auto run on the embedded engine and those with engine: llama-server cannot start`);
  else log.info('no llama-server found; models run on the embedded engine');
  // Only a llama-server build with --n-cpu-moe keeps a mixture of experts' expert tensors on
  // the CPU; node-llama-cpp has no such option. `place` is not offered what the engine cannot do.
  const llamaServerMoe = llamaServer.found
    ? await probeCapabilities(llamaServer.path).then((capabilities) => capabilities.flags.has('--n-cpu-moe') || capabilities.flags.has('-ncmoe'), () => false)
    : false;
  return {
    catalog,
    cpuBuffers,
    llamaServer,
    llamaServerPath,
    engineOf,
    cpuBufferPrior: prior,
    cpuBufferKeyOf,
    keepsExpertsOnCpu: (model) => engineOf(model) === 'llama-server' && llamaServerMoe,
  };
}
