// What a person sees before any model exists: where llmtray looks, and where to list models.
import { useDashboard } from '../store/store-context.js';
import { CopyButton } from './copy-button.js';

export function EmptyCatalog() {
  const modelDirs = useDashboard((state) => state.snapshot?.modelDirs);
  const configPath = useDashboard((state) => state.snapshot?.configPath);
  if (modelDirs === undefined || configPath === undefined) return null;
  return (
    <section className="empty" aria-labelledby="empty-heading">
      <h2 id="empty-heading">No models yet</h2>
      <p>Put GGUF files in one of these folders; llmtray picks them up by itself:</p>
      {modelDirs.length === 0 ? (
        <p className="muted">No folders are scanned. Add some under <code>modelDirs</code> in the config file.</p>
      ) : (
        <ul className="path-list" aria-label="Folders scanned for models">
          {modelDirs.map((dir) => (
            <li key={dir}>
              <code>{dir}</code>
            </li>
          ))}
        </ul>
      )}
      <p>Or list models with their context, priority, draft and fallback in the config file:</p>
      <div className="path-row">
        <code>{configPath}</code>
        <CopyButton text={configPath} label="Copy config file path" />
      </div>
      <pre className="code-block">{`models:
  - id: qwen-7b
    path: ~/models/qwen2.5-7b-instruct-q4_k_m.gguf
    ctx: 16384
    pinned: true`}</pre>
    </section>
  );
}
