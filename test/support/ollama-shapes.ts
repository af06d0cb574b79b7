// Ollama's answer shapes (test/fixtures/ollama-api/shapes.json, its source inside): an answer
// matches an example when it has every key the example has, each with a value of the same JSON
// type, recursively (a list's items against the example's first). Extra keys are allowed, as
// Ollama's clients ignore them; a missing key or a string where a number belongs is what breaks
// a client, and what this catches.
import { readFileSync } from 'node:fs';

const fixture = JSON.parse(readFileSync(new URL('../fixtures/ollama-api/shapes.json', import.meta.url), 'utf8')) as { examples: Record<string, unknown> };

export type OllamaExample = keyof typeof fixture.examples & string;

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Where `actual` departs from the example's shape, one line each; empty when it matches. */
export function ollamaShapeErrors(example: string, actual: unknown): string[] {
  if (!(example in fixture.examples)) throw new Error(`test/fixtures/ollama-api/shapes.json has no example '${example}'`);
  return differences(fixture.examples[example], actual, example);
}

function differences(expected: unknown, actual: unknown, at: string): string[] {
  if (kindOf(expected) !== kindOf(actual)) return [`${at}: expected ${kindOf(expected)}, got ${kindOf(actual)} (${JSON.stringify(actual)?.slice(0, 80)})`];
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (expected.length === 0) return [];
    return actual.flatMap((item, i) => differences(expected[0], item, `${at}[${i}]`));
  }
  if (kindOf(expected) === 'object') {
    const want = expected as Record<string, unknown>;
    const got = actual as Record<string, unknown>;
    // model_info and tool arguments are open maps: their keys are the model's and the tool's.
    if (at.endsWith('.model_info') || at.endsWith('.arguments')) return [];
    return Object.keys(want).flatMap((key) => (key in got ? differences(want[key], got[key], `${at}.${key}`) : [`${at}.${key}: missing`]));
  }
  return [];
}
