// The Connect tab's example programs, as text: pure strings from the snapshot's endpoint, a
// model id and keysRequired, so they are right for this machine's port, catalog and listen
// settings (with client keys configured an example without one gets 401). Apart from the view
// so that test/integration/readme-examples.test.ts can run them against a real daemon without
// React.
//
// Every example bounds its answer (max_tokens): a model that does not end its turn soon (the
// demo's random-weight models never do) would otherwise write to its context's end, a minute
// of noise on a CPU before the person who pasted the example sees anything.

export type Example = 'curl' | 'javascript' | 'python';

export const EXAMPLE_LABEL: Record<Example, string> = { curl: 'curl', javascript: 'OpenAI SDK (JavaScript)', python: 'OpenAI SDK (Python)' };

/**
 * What the examples send as the key once one is required. A placeholder rather than a real key:
 * the snapshot carries none (a key shown here would be one read away from /v1), and it says
 * where the person's own key lives.
 */
export const CLIENT_KEY_PLACEHOLDER = '<your client key from listen.clientKeys>';

/** What the SDK examples send while no key is required: the SDKs refuse to start without one, and the router ignores it. */
const UNCHECKED_KEY = 'llmtray';

/** The answer's bound in every example: enough words to see the model answer, seconds on a CPU. */
export const EXAMPLE_MAX_TOKENS = 64;

export interface ExampleTarget {
  /** The /v1 base URL. */
  endpoint: string;
  model: string;
  /** The router refuses a request without one of listen.clientKeys (Snapshot.keysRequired). */
  keysRequired: boolean;
}

/** The example program for `target.model` against `target.endpoint`. */
export function exampleFor(kind: Example, { endpoint, model, keysRequired }: ExampleTarget): string {
  const apiKey = keysRequired ? CLIENT_KEY_PLACEHOLDER : UNCHECKED_KEY;
  switch (kind) {
    case 'curl':
      return [
        `curl ${endpoint}/chat/completions`,
        `  -H 'Content-Type: application/json'`,
        ...(keysRequired ? [`  -H 'Authorization: Bearer ${CLIENT_KEY_PLACEHOLDER}'`] : []),
        `  -d '{"model": "${model}", "max_tokens": ${EXAMPLE_MAX_TOKENS}, "messages": [{"role": "user", "content": "Hello!"}]}'`,
      ].join(' \\\n');
    case 'javascript':
      return `import OpenAI from 'openai';

const client = new OpenAI({ baseURL: '${endpoint}', apiKey: '${apiKey}' });
const reply = await client.chat.completions.create({
  model: '${model}',
  max_tokens: ${EXAMPLE_MAX_TOKENS},
  messages: [{ role: 'user', content: 'Hello!' }],
});
console.log(reply.choices[0].message.content);`;
    case 'python':
      return `from openai import OpenAI

client = OpenAI(base_url="${endpoint}", api_key="${apiKey}")
reply = client.chat.completions.create(
    model="${model}",
    max_tokens=${EXAMPLE_MAX_TOKENS},
    messages=[{"role": "user", "content": "Hello!"}],
)
print(reply.choices[0].message.content)`;
  }
}
