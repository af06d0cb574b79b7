// Model names as Ollama's apps send them: `name:tag`, where a name without a tag means
// `name:latest` (Ollama's own rule). llmtray's models have ids without tags, so `demo-chat:latest`
// is `demo-chat`, and a list shows each id as `id:latest`, the form an app sends back.
// An id that has a tag of its own (`hf.co/OWNER/REPO:Q4_K_M`, a pulled model's name) is its own
// Ollama name. Pure.

const LATEST = ':latest';

/** Whether the last path segment of `name` carries a `:tag`. */
function hasTag(name: string): boolean {
  const lastSegment = name.slice(name.lastIndexOf('/') + 1);
  return lastSegment.includes(':');
}

/** The name an Ollama app lists and sends back for the model `id`. */
export function ollamaNameOf(id: string): string {
  return hasTag(id) ? id : `${id}${LATEST}`;
}

/**
 * The catalog names `name` may mean, most exact first: itself, then without `:latest`. A
 * resolver tries each; the first it knows is the model.
 */
export function catalogNamesFor(name: string): string[] {
  return name.endsWith(LATEST) && name.length > LATEST.length ? [name, name.slice(0, -LATEST.length)] : [name];
}
