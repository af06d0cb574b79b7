// `llmtray serve --demo`: generated models and a config whose budget makes every behaviour
// visible on any machine — swapping, fallback and quarantine — without a GPU or a download.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateDemoModels, type DemoModels } from '../catalog/demo/demo-models.js';
import type { CatalogModel } from '../catalog/catalog.js';
import { estimateOnCpu, footprintAt } from '../policy/levels.js';
import { demoConfigText } from './demo-config.js';

export interface DemoSetup {
  configPath: string;
  models: DemoModels;
}

/** What the demo shows a person: everything, with a budget limit once the catalog has priced the models. */
function serveDemoConfig(models: DemoModels, limitBytes?: number): string {
  return demoConfigText(models, {
    comment: [
      'Written by `llmtray serve --demo`; regenerated at every demo start.',
      'The budget fits demo-chat with its draft, or the smaller models, but not all at once,',
      'so on-demand swapping, fallback (demo-chat -> demo-tiny) and quarantine (demo-broken) show.',
      'Every model has the same priority, so the most recently requested one wins the memory.',
    ],
    reserveBytes: 0,
    ...(limitBytes === undefined ? {} : { limitBytes }),
    fallbackAndAliases: true,
    broken: true,
  });
}

/** Generates the demo models into DATA_DIR/demo and writes a config without a budget limit yet. */
export async function prepareDemo(dataDir: string): Promise<DemoSetup> {
  const dir = join(dataDir, 'demo');
  await mkdir(dir, { recursive: true });
  const models = await generateDemoModels(dir);
  const configPath = join(dir, 'config.yaml');
  await writeFile(configPath, serveDemoConfig(models));
  return { configPath, models };
}

/**
 * The demo's budget limit from the catalog's own estimates: room for demo-chat with its draft
 * plus half of demo-tiny, so the two never sit together and asking for one evicts the other.
 * `runtimeBytes` is what each engine process itself costs where it counts (its runtime in host
 * RAM, its backend's context on a GPU), since every model's footprint includes it.
 */
export function demoBudgetLimit(models: readonly CatalogModel[], runtimeBytes = 0, weightsOnCpu = false): number | null {
  const bytes = (id: string) => {
    const estimate = models.find((m) => m.id === id)?.estimate;
    return estimate == null ? null : footprintAt('full', weightsOnCpu ? estimateOnCpu(estimate) : estimate).deviceBytes + runtimeBytes;
  };
  const chat = bytes('demo-chat');
  const tiny = bytes('demo-tiny');
  if (chat === null || tiny === null) return null;
  return chat + Math.floor(tiny / 2);
}

/** Rewrites the demo config with its budget limit; the caller reloads the catalog. */
export async function writeDemoLimit(setup: DemoSetup, limitBytes: number): Promise<void> {
  await writeFile(setup.configPath, serveDemoConfig(setup.models, limitBytes));
}
