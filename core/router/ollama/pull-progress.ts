// A pull's views (core/pull's PullManager, one each change and at most one a second while bytes
// arrive) re-told as Ollama's pull progress (docs/api.md "Pull a Model", test/fixtures/ollama-api):
// `pulling manifest`, then per file `pulling <digest>` with `digest`, `total`, `completed`, then
// `verifying sha256 digest`, `writing manifest`, `success`; a pull that ends otherwise is one
// `{"error": …}`. Pure: it keeps only what it already said, so a line is never repeated.
import type { PullView } from '../../contracts/hub/pulls.js';

export type OllamaPullLine =
  | { status: string }
  | { status: string; digest: string; total: number; completed: number }
  | { error: string };

export const PULLING_MANIFEST: OllamaPullLine = { status: 'pulling manifest' };

export class PullProgressToOllama {
  /** Per file path, the bytes last said (a file's line is said again only when they moved). */
  private readonly said = new Map<string, number>();
  private verifying = false;
  private ended = false;

  /** The lines this view adds to what was said; empty when nothing moved. */
  next(view: PullView): OllamaPullLine[] {
    if (this.ended) return [];
    const lines: OllamaPullLine[] = [];
    // A finished pull's files are whole: each file's last line says so, even when the throttle swallowed it.
    const done = view.state === 'done';
    for (const file of view.files) {
      const completed = done ? file.sizeBytes : file.receivedBytes;
      if (this.said.get(file.path) === completed) continue;
      this.said.set(file.path, completed);
      const digest = `sha256:${file.sha256 ?? ''}`;
      // Ollama's status names the blob by 12 hex digits of its digest (server/download.go: digest[7:19]).
      lines.push({ status: `pulling ${digest.slice(7, 19)}`, digest, total: file.sizeBytes, completed });
    }
    if ((view.state === 'verifying' || done) && !this.verifying) {
      this.verifying = true;
      lines.push({ status: 'verifying sha256 digest' });
    }
    if (done) {
      this.ended = true;
      // Pulled but not listed (a bad GGUF, a config that hides it): an app must not believe it can use it.
      if (view.servedAs === undefined) lines.push({ error: view.message });
      else lines.push({ status: 'writing manifest' }, { status: 'success' });
    } else if (view.state === 'failed' || view.state === 'cancelled') {
      this.ended = true;
      lines.push({ error: `the pull of ${view.id} ${view.state === 'failed' ? 'failed' : 'was cancelled'}: ${view.message}` });
    }
    return lines;
  }
}
