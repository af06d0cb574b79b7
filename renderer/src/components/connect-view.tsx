// How an app talks to llmtray: the base URLs it can use, whether it needs a client key, and
// examples ready to paste for the models that exist (connect-examples.ts writes them).
import { useState } from 'react';
import { useDashboard } from '../store/store-context.js';
import { exampleFor, EXAMPLE_LABEL, type Example } from './connect-examples.js';
import { CopyButton } from './copy-button.js';

export function ConnectView() {
  const endpoint = useDashboard((state) => state.snapshot?.endpoint);
  const networkEndpoints = useDashboard((state) => state.snapshot?.networkEndpoints);
  const keysRequired = useDashboard((state) => state.snapshot?.keysRequired ?? false);
  const clientKeyNames = useDashboard((state) => state.snapshot?.clientKeyNames);
  const configPath = useDashboard((state) => state.snapshot?.configPath);
  const models = useDashboard((state) => state.snapshot?.models);
  const [chosenModel, setChosenModel] = useState<string | null>(null);
  const [chosenEndpoint, setChosenEndpoint] = useState<string | null>(null);
  const [kind, setKind] = useState<Example>('curl');
  if (endpoint === undefined || networkEndpoints === undefined || clientKeyNames === undefined || configPath === undefined || models === undefined) return null;
  const endpoints = [endpoint, ...networkEndpoints];
  const model = chosenModel ?? models[0]?.id ?? 'MODEL';
  // A base URL a reload took away (an allowed host name removed) falls back to this machine's.
  const target = chosenEndpoint !== null && endpoints.includes(chosenEndpoint) ? chosenEndpoint : endpoint;
  const example = exampleFor(kind, { endpoint: target, model, keysRequired });

  return (
    <section className="connect" aria-labelledby="connect-heading">
      <h2 id="connect-heading">Connect an app</h2>
      <p className="muted">Any OpenAI-compatible client works: point its base URL here and name a model.</p>
      <div className="path-row endpoint-row">
        {networkEndpoints.length > 0 && <span className="muted">This machine</span>}
        <code>{endpoint}</code>
        <CopyButton text={endpoint} label="Copy base URL" />
      </div>
      {networkEndpoints.map((url) => (
        <div className="path-row endpoint-row" key={url}>
          <span className="muted">Other machines</span>
          <code>{url}</code>
          <CopyButton text={url} label={`Copy base URL ${url}`} />
        </div>
      ))}
      {keysRequired && <KeyNote names={clientKeyNames} configPath={configPath} />}
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
        {endpoints.length > 1 && (
          <select className="field" value={target} onChange={(event) => setChosenEndpoint(event.target.value)} aria-label="Base URL for the example">
            {endpoints.map((url) => (
              <option key={url} value={url}>
                {url}
              </option>
            ))}
          </select>
        )}
        {models.length > 0 && (
          <select className="field" value={model} onChange={(event) => setChosenModel(event.target.value)} aria-label="Model for the example">
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

/** Where the keys come from, and how a client sends one; the keys themselves never reach the dashboard. */
function KeyNote({ names, configPath }: { names: readonly string[]; configPath: string }) {
  if (names.length === 0) {
    // A network listener whose keys a reload removed: the router refuses every request.
    return (
      <p role="note">
        No client key is configured, so this endpoint serves nobody: add one under <code>listen.clientKeys</code> in <code>{configPath}</code>.
      </p>
    );
  }
  return (
    <p role="note">
      Every request needs a client key: one of <code>listen.clientKeys</code> in <code>{configPath}</code> (configured: {names.join(', ')}), sent as{' '}
      <code>Authorization: Bearer &lt;key&gt;</code> by OpenAI clients or <code>x-api-key: &lt;key&gt;</code> by Anthropic clients.
    </p>
  );
}
