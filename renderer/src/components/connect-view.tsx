// How a local app talks to llmtray: the endpoint, and examples ready to paste for the models
// that exist. The examples are built from the snapshot's endpoint and ids, so they are right
// for this machine's port and catalog.
import { useState } from 'react';
import { useDashboard } from '../store/store-context.js';
import { CopyButton } from './copy-button.js';

type Example = 'curl' | 'javascript' | 'python';

const EXAMPLE_LABEL: Record<Example, string> = { curl: 'curl', javascript: 'OpenAI SDK (JavaScript)', python: 'OpenAI SDK (Python)' };

/** The example program for `model` against `endpoint` (the /v1 base URL). */
export function exampleFor(kind: Example, endpoint: string, model: string): string {
  switch (kind) {
    case 'curl':
      return `curl ${endpoint}/chat/completions \\
  -H 'Content-Type: application/json' \\
  -d '{"model": "${model}", "messages": [{"role": "user", "content": "Hello!"}]}'`;
    case 'javascript':
      return `import OpenAI from 'openai';

const client = new OpenAI({ baseURL: '${endpoint}', apiKey: 'llmtray' });
const reply = await client.chat.completions.create({
  model: '${model}',
  messages: [{ role: 'user', content: 'Hello!' }],
});
console.log(reply.choices[0].message.content);`;
    case 'python':
      return `from openai import OpenAI

client = OpenAI(base_url="${endpoint}", api_key="llmtray")
reply = client.chat.completions.create(
    model="${model}",
    messages=[{"role": "user", "content": "Hello!"}],
)
print(reply.choices[0].message.content)`;
  }
}

export function ConnectView() {
  const endpoint = useDashboard((state) => state.snapshot?.endpoint);
  const models = useDashboard((state) => state.snapshot?.models);
  const [chosen, setChosen] = useState<string | null>(null);
  const [kind, setKind] = useState<Example>('curl');
  if (endpoint === undefined || models === undefined) return null;
  const model = chosen ?? models[0]?.id ?? 'MODEL';
  const example = exampleFor(kind, endpoint, model);

  return (
    <section className="connect" aria-labelledby="connect-heading">
      <h2 id="connect-heading">Connect an app</h2>
      <p className="muted">Any OpenAI-compatible client works: point its base URL here and name a model.</p>
      <div className="path-row endpoint-row">
        <code>{endpoint}</code>
        <CopyButton text={endpoint} label="Copy base URL" />
      </div>
      <div className="connect-controls">
        <div role="group" aria-label="Example" className="segmented">
          {(Object.keys(EXAMPLE_LABEL) as Example[]).map((option) => (
            <button
              key={option}
              type="button"
              aria-pressed={kind === option}
              className="segmented-option"
              onClick={() => setKind(option)}
            >
              {EXAMPLE_LABEL[option]}
            </button>
          ))}
        </div>
        {models.length > 0 && (
          <select className="field" value={model} onChange={(event) => setChosen(event.target.value)} aria-label="Model for the example">
            {models.map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
              </option>
            ))}
          </select>
        )}
      </div>
      <div className="example">
        <pre className="code-block" aria-label={`${EXAMPLE_LABEL[kind]} example`} role="region">
          {example}
        </pre>
        <CopyButton text={example} label={`Copy ${EXAMPLE_LABEL[kind]} example`} />
      </div>
    </section>
  );
}
