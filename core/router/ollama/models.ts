// Ollama's model routes that load nothing: `/api/version`, `/api/tags`, `/api/show`, `/api/ps`.
// Each answer is built from the gateway's cards (the catalog and the GGUF header) in the shapes
// Ollama's docs/api.md gives (test/fixtures/ollama-api/ keeps the ones relied on). Pure: the
// caller reads the cards and writes the answer.
import type { ModelCard, ResidentModel } from '../model-gateway.js';
import { ollamaNameOf } from './names.js';

/**
 * The Ollama version llmtray answers as. Apps check a minimum before they use the API (VS Code
 * Copilot Chat's Ollama provider refuses servers older than 0.6.4); llmtray serves the API of
 * Ollama's docs/api.md as of 0.12 (tool calls with arguments as objects, `think`, `/api/embed`),
 * so it says that version, and its own beside it.
 */
export const OLLAMA_API_VERSION = '0.12.0';

export interface OllamaDetails {
  parent_model: string;
  format: 'gguf';
  family: string;
  families: string[] | null;
  parameter_size: string;
  quantization_level: string;
}

/** Ollama's `parameter_size`: "7.6B", "494.03M", "125K" from a count of weights. */
export function parameterSize(count: number): string {
  const round = (value: number): string => String(Math.round(value * 100) / 100);
  if (count >= 1e9) return `${round(count / 1e9)}B`;
  if (count >= 1e6) return `${round(count / 1e6)}M`;
  if (count >= 1e3) return `${round(count / 1e3)}K`;
  return String(count);
}

export function detailsOf(card: ModelCard): OllamaDetails {
  const family = card.gguf?.architecture ?? 'unknown';
  return {
    parent_model: '',
    format: 'gguf',
    family,
    // A vision model is its language model and its image encoder, as Ollama lists them.
    families: card.vision ? [family, 'clip'] : [family],
    parameter_size: card.gguf === null ? '' : parameterSize(card.gguf.parameterCount),
    quantization_level: card.gguf?.fileType ?? '',
  };
}

/** One model of `/api/tags`. */
export function tagsEntry(card: ModelCard): Record<string, unknown> {
  const name = card.hubName ?? ollamaNameOf(card.modelId);
  return { name, model: name, modified_at: new Date(card.modifiedAt).toISOString(), size: card.sizeBytes, digest: card.digest, details: detailsOf(card) };
}

/**
 * What the model can do, in Ollama's words, as far as llmtray serves it: `completion` for any
 * model that writes, `embedding` for one that only embeds, `tools` where its chat template takes
 * tools, `thinking` where it writes a thinking block, `vision` with a projector. `insert`
 * (fill-in-the-middle) is never said: `suffix` is refused on /api/generate (fields.ts).
 */
export function capabilitiesOf(card: ModelCard): string[] {
  if (card.embeddingsOnly) return ['embedding'];
  const template = card.gguf?.chatTemplate ?? '';
  return [
    'completion',
    ...(/\btools\b/.test(template) ? ['tools'] : []),
    ...(/<think>|enable_thinking|reasoning_content/.test(template) ? ['thinking'] : []),
    ...(card.vision ? ['vision'] : []),
  ];
}

/** `/api/show`'s answer. */
export function showAnswer(card: ModelCard): Record<string, unknown> {
  return {
    license: '',
    modelfile: `# llmtray serves this model from its GGUF file; it has no Modelfile.\nFROM ${card.modelId}\nPARAMETER num_ctx ${card.contextTokens}\n`,
    parameters: `num_ctx                        ${card.contextTokens}`,
    template: card.gguf?.chatTemplate ?? '',
    details: detailsOf(card),
    model_info: card.gguf?.metadata ?? {},
    capabilities: capabilitiesOf(card),
    modified_at: new Date(card.modifiedAt).toISOString(),
  };
}

/** One model of `/api/ps`; `card` for its details, when it could be read. */
export function psEntry(resident: ResidentModel, card: ModelCard | undefined): Record<string, unknown> {
  const name = card?.hubName ?? ollamaNameOf(resident.modelId);
  return {
    name,
    model: name,
    size: resident.sizeBytes,
    digest: card?.digest ?? '',
    ...(card === undefined ? {} : { details: detailsOf(card) }),
    // Ollama says a model that stays for ever expires in the far future; so does llmtray for a pinned or busy one.
    expires_at: new Date(resident.expiresAt ?? FOREVER).toISOString(),
    size_vram: resident.deviceBytes,
    context_length: resident.contextTokens,
  };
}

/** Ollama's "never": the year 2318, which is what its `keep_alive: -1` reports. */
const FOREVER = Date.UTC(2318, 0, 1);
