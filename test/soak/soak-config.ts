// The soak's models and the config the daemon serves them with. Every model has one job, and
// the budget is derived from the catalog's own estimates so that the premises hold by
// construction and are checked, not hoped for: two chat models never fit together (every switch
// between them is a swap), and `big` fits at its full level beside the pinned `tiny` (so it is
// launched at full and runs out of memory for real, instead of being refused by the plan).
//
// The daemon prices each model with its engine's runtime (core/engine/runtime-overhead.ts): the
// host prior of 100 MiB for the embedded engine until it measures the first server, ~99–105 MiB
// here. The budget allows RUNTIME_ALLOWANCE per engine, so big and tiny fit for any figure up to
// it, while two chat models beside tiny stay out for any figure above ~57 MiB. Without it (the
// budget from the bare estimates) big alone was strictly unschedulable and never launched.
//
// Out of memory for real: the daemon runs under `prlimit --as`, which every engine inherits, set
// ADDRESS_SPACE_ABOVE_TINY_BYTES above the address space the embedded engine holds with tiny
// loaded on the Node that runs the soak, measured at the start (engine-address-space.ts: that
// base is 1.43 GB on Node 20 and 1.83 GB on Node 24, and a limit fixed from the first stalled
// the soak on the second). Measured peak address space of the embedded engine (VmPeak,
// node-llama-cpp 3.21.1, CPU) above demo-tiny @2048, Node 20 / Node 24: demo-chat @32768
// +0.30 GB, @65536 +0.59 / +0.63 GB, @131072 +1.20 / +1.24 GB; the 362 MB slow model @4096
// without mmap +0.39 GB; the daemon itself holds about the base. At +0.89 GB, big (demo-chat
// @131072) misses by ~0.3 GB at 'full' and clears it by ~0.6 GB at 'smaller-context' (a quarter of the
// context), and the chat models (@65536) clear it by ~0.25 GB: each margin far past run-to-run
// noise (a few MB).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Catalog } from '../../core/catalog/catalog.js';
import { generateDemoModels } from '../../core/catalog/demo/demo-models.js';
import { writeLlamaGguf, type LlamaModelShape } from '../../core/catalog/demo/gguf-writer.js';
import type { LaunchLevel } from '../../core/contracts/launch-level.js';
import { footprintAt } from '../../core/policy/levels.js';
import { RUNTIME_PRIOR_BYTES } from '../../core/engine/runtime-overhead.js';
import { formatBytes } from '../../core/contracts/format-bytes.js';
import { embeddedEngineAddressSpace } from './engine-address-space.js';

/** The daemon's address-space limit above the embedded engine's with tiny loaded (see above). */
const ADDRESS_SPACE_ABOVE_TINY_BYTES = 887_000_000;

/** The models and what each is for. */
export const MODELS = {
  /** Pinned through the admin API at the start: the pin a `kill -9` of the daemon must not lose. */
  tiny: 'tiny',
  /** Traffic; the SIGSTOP (hang) target, with a short hang limit (HANG_LIMIT). */
  chatA: 'chat-a',
  /** Traffic; the SIGKILL (crash) target. */
  chatB: 'chat-b',
  /** Only the client that disconnects uses it, so its in-flight count shows whether the abort released the claim. */
  chatC: 'chat-c',
  /** A context too big for the address space at 'full', not at 'smaller-context'. */
  big: 'big',
  /** A larger model loaded without mmap (its 362 MB copied in): a slow load, which the soak stretches further. */
  slow: 'slow',
  /** A corrupt file: invalid, quarantined at its first failure. */
  broken: 'broken',
} as const;

/** The models the traffic clients alternate; only one of the chat models fits at a time. */
export const TRAFFIC_MODELS: readonly string[] = [MODELS.chatA, MODELS.chatB, MODELS.tiny];

const TINY_CONTEXT = 2048;
const CHAT_CONTEXT = 65_536;
/**
 * chat-a's hang limit: short, so a frozen engine is judged within seconds, yet above the
 * longest prompt batch (no progress shows inside one) of demo-chat on this shared machine at a
 * load average of 14 (about 1 s).
 */
export const HANG_LIMIT = '4s';
/**
 * How long a request may wait for its model. The soak judges what happens, not how fast: on
 * this 2-core machine shared with other work a swap takes 3 s idle and over 20 s at a load
 * average of 14, and a few requests queued behind faults and swaps exceed the default 45 s.
 */
const ACTIVATION_WAIT = '180s';
const BIG_CONTEXT = 131_072;
/** What the daemon prices each embedded engine with before any model: its prior, and what it measures here. */
const RUNTIME_PRIOR = RUNTIME_PRIOR_BYTES.host.embedded;
/** The runtime the budget leaves room for per engine: the prior and 30 % more, for the figure the daemon measures. */
const RUNTIME_ALLOWANCE = Math.round(RUNTIME_PRIOR * 1.3);

/** 16 layers, 1024 wide, f16: 362 MB, about twice demo-chat's load on this machine even before the soak stretches it. */
const SLOW_SHAPE: LlamaModelShape = {
  name: 'soak-slow', nLayer: 16, nEmbd: 1024, nHead: 16, nHeadKv: 4, nFf: 2816, contextLength: 4096, fileType: 'f16', seed: 2024,
};

export interface SoakSetup {
  configPath: string;
  /** Where the model files are; every engine's argv names a file under it. */
  modelDir: string;
  /** The slow model's file, to find its engine while it loads. */
  slowPath: string;
  budgetBytes: number;
  /** The daemon's address-space limit (prlimit --as), from `tinyEngineBytes`. */
  addressSpaceBytes: number;
  /** The address space the embedded engine holds with tiny loaded, on this Node. */
  tinyEngineBytes: number;
  /** Full-level estimates, bytes, by model id: the numbers the premises were checked with. */
  fullBytes: Record<string, number>;
}

function configText(paths: { chat: string; tiny: string; broken: string; slow: string }, limitBytes: number | null): string {
  const chat = (id: string, extra = '') => `  - id: ${id}\n    path: ${JSON.stringify(paths.chat)}\n    ctx: ${CHAT_CONTEXT}\n${extra}`;
  return `# Written by the soak (test/soak/soak-config.ts); see that file for why each model is here.
modelDirs: []
activationWait: ${ACTIVATION_WAIT}
budget:
  reserve: 0
${limitBytes === null ? '' : `  limit: ${limitBytes}\n`}models:
  - id: ${MODELS.tiny}
    path: ${JSON.stringify(paths.tiny)}
    ctx: ${TINY_CONTEXT}
${chat(MODELS.chatA, `    hangLimit: ${HANG_LIMIT}\n`)}${chat(MODELS.chatB)}${chat(MODELS.chatC)}  - id: ${MODELS.big}
    path: ${JSON.stringify(paths.chat)}
    ctx: ${BIG_CONTEXT}
  - id: ${MODELS.slow}
    path: ${JSON.stringify(paths.slow)}
    ctx: 4096
    args: ["--no-mmap"]
  - id: ${MODELS.broken}
    path: ${JSON.stringify(paths.broken)}
    ctx: 2048
`;
}

/**
 * Writes the models into DIR/models and the config into DIR/config.yaml, with the budget from
 * the catalog's estimates. Rejects, naming the numbers, when a premise of the soak does not hold.
 */
export async function prepareSoak(dir: string): Promise<SoakSetup> {
  const modelDir = join(dir, 'models');
  await mkdir(modelDir, { recursive: true });
  const demo = await generateDemoModels(modelDir);
  const slowPath = join(modelDir, 'soak-slow.gguf');
  await writeLlamaGguf(slowPath, SLOW_SHAPE);
  const paths = { chat: demo.chat.path, tiny: demo.tiny.path, broken: demo.broken.path, slow: slowPath };
  const configPath = join(dir, 'config.yaml');
  await writeFile(configPath, configText(paths, null));

  const catalog = await Catalog.open({ configPath, dataDir: dir });
  /** The model's footprint as the daemon prices it, with `runtimeBytes` for its engine. */
  const bytes = (id: string, level: LaunchLevel = 'full', runtimeBytes = RUNTIME_PRIOR): number => {
    const estimate = catalog.resolve(id)?.estimate;
    if (estimate == null) throw new Error(`the soak's model '${id}' has no estimate: ${catalog.resolve(id)?.metadataError ?? 'not in the catalog'}`);
    return footprintAt(level, { ...estimate, runtimeBytes }).deviceBytes;
  };
  const fullBytes = Object.fromEntries([MODELS.tiny, MODELS.chatA, MODELS.big, MODELS.slow].map((id) => [id, bytes(id)]));
  const budgetBytes = bytes(MODELS.big, 'full', RUNTIME_ALLOWANCE) + bytes(MODELS.tiny, 'full', RUNTIME_ALLOWANCE);
  const room = budgetBytes - bytes(MODELS.tiny);
  if (2 * bytes(MODELS.chatA) <= room) {
    throw new Error(`two chat models (${formatBytes(bytes(MODELS.chatA))} each) fit together in the ${formatBytes(room)} the pinned model leaves: the traffic would not swap`);
  }
  if (bytes(MODELS.big, 'smaller-context') + bytes(MODELS.tiny) > budgetBytes) {
    throw new Error(`big at the smaller-context level (${formatBytes(bytes(MODELS.big, 'smaller-context'))}) does not fit the ${formatBytes(budgetBytes)} budget: its out-of-memory recovery could not load`);
  }
  await writeFile(configPath, configText(paths, budgetBytes));
  const tinyEngineBytes = await embeddedEngineAddressSpace(paths.tiny, TINY_CONTEXT);
  return { configPath, modelDir, slowPath, budgetBytes, addressSpaceBytes: tinyEngineBytes + ADDRESS_SPACE_ABOVE_TINY_BYTES, tinyEngineBytes, fullBytes };
}
