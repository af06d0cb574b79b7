// The Ollama field table (core/router/ollama/fields.ts) against what the `ollama` client can send
// (its request types, node_modules/ollama/dist/browser.d.ts, version pinned in package.json) and
// against its copy in core/router/README.md.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OLLAMA_FIELDS, OLLAMA_OPTIONS, ollamaFieldTableMarkdown, refusedOllamaField } from '../../../../core/router/ollama/fields.js';

const types = readFileSync(new URL('../../../../node_modules/ollama/dist/browser.d.ts', import.meta.url), 'utf8');

/** The field names of one interface of the client's types. */
function fieldsOf(name: string): string[] {
  const body = new RegExp(`interface ${name} \\{([\\s\\S]*?)\\n\\}`).exec(types)?.[1];
  if (body === undefined) throw new Error(`the ollama client has no interface ${name}`);
  return [...body.matchAll(/^ {4}(\w+)\??:/gm)].map((match) => match[1] as string);
}

describe("the Ollama field table", () => {
  it.each([
    ['ChatRequest', 'chat'],
    ['GenerateRequest', 'generate'],
    ['EmbedRequest', 'embed'],
    ['EmbeddingsRequest', 'embeddings'],
  ] as const)("has a row for every field of the client's %s", (type, endpoint) => {
    expect(fieldsOf(type).filter((field) => OLLAMA_FIELDS[endpoint][field] === undefined)).toEqual([]);
  });

  it("has a row for every option of the client's Options", () => {
    expect(fieldsOf('Options').filter((option) => OLLAMA_OPTIONS[option] === undefined)).toEqual([]);
  });

  it('refuses a field outside the table, and one the table refuses unless it asks for nothing', () => {
    expect(refusedOllamaField(OLLAMA_FIELDS.generate, { model: 'x', brand_new: 1 })?.field).toBe('brand_new');
    expect(refusedOllamaField(OLLAMA_FIELDS.generate, { raw: true })?.why).toContain('(only false is taken)');
    expect(refusedOllamaField(OLLAMA_FIELDS.generate, { raw: false })).toBeNull();
    expect(refusedOllamaField(OLLAMA_FIELDS.generate, { raw: null })).toBeNull();
  });

  it('is printed in core/router/README.md as it is', () => {
    const readme = readFileSync(new URL('../../../../core/router/README.md', import.meta.url), 'utf8');
    const printed = readme.split('<!-- ollama-fields:start -->\n')[1]?.split('\n<!-- ollama-fields:end -->')[0];
    expect(printed, 'regenerate the table between the ollama-fields markers from ollamaFieldTableMarkdown()').toBe(ollamaFieldTableMarkdown());
  });
});
