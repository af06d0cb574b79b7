// The demo model set: real llama-architecture GGUF files generated on the spot, so the app
// (`llmtray serve --demo`), the tests and the benchmarks run real engines with nothing
// downloaded. Sizes are chosen so that memory and load time are measurable (demo-chat) while
// the whole set still generates in about a second.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { truncatedLlamaGgufSize, writeTruncatedLlamaGguf } from './corrupt-gguf.js';
import { llamaGgufLayout, writeLlamaGguf, type LlamaModelShape } from './gguf-writer.js';
import { bertGgufSize, writeBertGguf, type BertModelShape } from './bert-gguf-writer.js';

export type DemoModelId = 'demo-chat' | 'demo-draft' | 'demo-tiny' | 'demo-broken' | 'demo-embed';

export interface DemoModel {
  id: DemoModelId;
  path: string;
  bytes: number;
  description: string;
}

export interface DemoModels {
  /** The main chat model: f16, ~48 MB. */
  chat: DemoModel;
  /** demo-chat's draft for speculative decoding: same vocabulary, ~0.8 MB. */
  draft: DemoModel;
  /** A small model; demo-chat's configured fallback. */
  tiny: DemoModel;
  /** A corrupt file (tensor data cut short); llama.cpp refuses to load it. */
  broken: DemoModel;
  /**
   * A BERT encoder whose GGUF names its pooling, so the catalog marks it an embedding model:
   * /v1/embeddings has a model to answer with in the demo, as a retrieval app expects.
   */
  embed: DemoModel;
}

interface DemoSpec {
  id: Exclude<DemoModelId, 'demo-embed'>;
  shape: LlamaModelShape;
  corrupt: boolean;
  description: string;
}

/** The llama-architecture demo models' shapes (demo-embed is a BERT encoder: DEMO_EMBED_SHAPE). */
export const DEMO_SHAPES: Record<Exclude<DemoModelId, 'demo-embed'>, LlamaModelShape> = {
  'demo-chat': { name: 'demo-chat', nLayer: 8, nEmbd: 512, nHead: 8, nHeadKv: 4, nFf: 1408, contextLength: 8192, fileType: 'f16', seed: 1001 },
  'demo-draft': { name: 'demo-draft', nLayer: 2, nEmbd: 128, nHead: 4, nHeadKv: 2, nFf: 256, contextLength: 8192, fileType: 'f16', seed: 1002 },
  'demo-tiny': { name: 'demo-tiny', nLayer: 2, nEmbd: 128, nHead: 4, nHeadKv: 4, nFf: 384, contextLength: 4096, fileType: 'f32', seed: 1003 },
  'demo-broken': { name: 'demo-broken', nLayer: 2, nEmbd: 128, nHead: 4, nHeadKv: 4, nFf: 384, contextLength: 4096, fileType: 'f16', seed: 1004 },
};

/** demo-embed: mean pooling, as bge and MiniLM; ~2 MB of f32 weights. */
export const DEMO_EMBED_SHAPE: BertModelShape = { name: 'demo-embed', nLayer: 2, nEmbd: 128, nHead: 4, nFf: 512, contextLength: 512, pooling: 'mean', seed: 1005 };
const EMBED_DESCRIPTION = 'Demo embedding model: BERT encoder, 2 layers, 128 wide, mean pooling; random weights, deterministic vectors for /v1/embeddings.';

const SPECS: DemoSpec[] = [
  { id: 'demo-chat', shape: DEMO_SHAPES['demo-chat'], corrupt: false, description: 'Demo chat model: llama architecture, 8 layers, 512 wide, f16, 8k context; random weights, prints random ASCII.' },
  { id: 'demo-draft', shape: DEMO_SHAPES['demo-draft'], corrupt: false, description: "Draft for demo-chat's speculative decoding: same vocabulary, 2 layers, 128 wide, f16." },
  { id: 'demo-tiny', shape: DEMO_SHAPES['demo-tiny'], corrupt: false, description: "Small fallback for demo-chat: 2 layers, 128 wide, f32; answers when demo-chat cannot." },
  { id: 'demo-broken', shape: DEMO_SHAPES['demo-broken'], corrupt: true, description: 'Corrupt on purpose: its tensor data is cut short, so every load fails (shows quarantine).' },
];

async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch {
    return undefined;
  }
}

async function ensure(dir: string, spec: DemoSpec): Promise<DemoModel> {
  const path = join(dir, `${spec.id}.gguf`);
  const bytes = spec.corrupt ? truncatedLlamaGgufSize(spec.shape) : llamaGgufLayout(spec.shape).totalBytes;
  if ((await sizeOf(path)) !== bytes) {
    await (spec.corrupt ? writeTruncatedLlamaGguf(path, spec.shape) : writeLlamaGguf(path, spec.shape));
  }
  return { id: spec.id, path, bytes, description: spec.description };
}

async function ensureEmbed(dir: string): Promise<DemoModel> {
  const path = join(dir, 'demo-embed.gguf');
  const bytes = bertGgufSize(DEMO_EMBED_SHAPE);
  if ((await sizeOf(path)) !== bytes) await writeBertGguf(path, DEMO_EMBED_SHAPE);
  return { id: 'demo-embed', path, bytes, description: EMBED_DESCRIPTION };
}

/**
 * Writes the demo set into `dir` (which must exist), skipping files already present with the
 * right size. Blocks on file I/O (about a second when nothing is there yet); idempotent;
 * deterministic; rejects with the I/O error if `dir` is not writable.
 */
export async function generateDemoModels(dir: string): Promise<DemoModels> {
  const [[chat, draft, tiny, broken], embed] = await Promise.all([Promise.all(SPECS.map((s) => ensure(dir, s))), ensureEmbed(dir)]);
  if (!chat || !draft || !tiny || !broken) throw new Error('demo model list is incomplete');
  return { chat, draft, tiny, broken, embed };
}
