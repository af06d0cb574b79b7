// One look at a busy engine for hang detection: does it answer its health probe, and what do
// its /slots counters say. See hang-watch.ts for how looks are judged.
import { engineGet } from '../engine-get.js';
import type { EngineLook } from './hang-watch.js';

/** Looks at the engine on `port`, both probes at once, each bounded by `timeoutMs`. Never rejects. */
export async function lookAtEngine(port: number, apiKey: string, timeoutMs: number): Promise<EngineLook> {
  const [health, slots] = await Promise.all([
    engineGet(port, apiKey, '/health', timeoutMs),
    engineGet(port, apiKey, '/slots', timeoutMs),
  ]);
  return { healthAnswered: health !== null, slots: slotsReading(slots) };
}

function slotsReading(answer: { status: number; body: string } | null): EngineLook['slots'] {
  if (answer === null) return null;
  // llama-server answers 501 when started with --no-slots; an engine without the endpoint, 404.
  if (answer.status === 404 || answer.status === 501) return 'unsupported';
  if (answer.status !== 200) return null;
  return slotsSignature(answer.body);
}

/**
 * The part of a /slots answer that moves while an engine works: per slot, its task and the
 * counters of prompt tokens submitted and processed and tokens decoded (llama-server's and the
 * embedded engine's field names). Anything else (settings, the prompt's text) is left out, so
 * that only work changes the signature. An answer in another shape is its own signature: any
 * change in it counts.
 *
 * Measured on a real llama-server: during a prompt, `n_prompt_tokens` grows when a batch is
 * submitted and `n_prompt_tokens_processed` when it is done; while generating,
 * `next_token[0].n_decoded` grows and `n_remain` shrinks. A single batch (2048 tokens by
 * default) shows no movement until it ends, so the hang limit must be longer than the slowest
 * batch: the 60 s default is, for anything a workstation runs at usable speed.
 */
export function slotsSignature(body: string): string {
  let slots: unknown;
  try {
    slots = JSON.parse(body);
  } catch {
    return body;
  }
  if (!Array.isArray(slots)) return body;
  return slots
    .map((slot: Record<string, unknown>) => {
      const next = Array.isArray(slot.next_token) ? (slot.next_token[0] as Record<string, unknown> | undefined) : undefined;
      return [slot.id, slot.id_task, slot.is_processing, slot.n_prompt_tokens, slot.n_prompt_tokens_processed, slot.n_decoded, next?.n_decoded, next?.n_remain].join(':');
    })
    .join('|');
}
