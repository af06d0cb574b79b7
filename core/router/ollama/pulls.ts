// Ollama's `POST /api/pull` and `DELETE /api/delete` over llmtray's Hugging Face pull (core/pull):
// the same pull the CLI, the dashboard and the tray show, started or joined by name, its progress
// re-told in Ollama's lines (pull-progress.ts). Only `hf.co/` names: a name from Ollama's own
// library (`llama3.2`, `library/x`, `user/model`, all on registry.ollama.ai) is refused, saying
// what to pull instead.
//
// A client that goes away stops the pull, as Ollama's does (server/download.go: the blob's
// download is cancelled when its last waiter leaves; its bytes stay and the next pull resumes).
// Only a pull an Ollama request started: one a person started with `llmtray pull` or the
// dashboard is theirs, and goes on when an app that joined it leaves.
import type { ServerResponse } from 'node:http';
import type { Event } from '../../common/emitter.js';
import { errorMessage } from '../../contracts/error-message.js';
import { isFinished, PullRefused, type PullView } from '../../contracts/hub/pulls.js';
import { invalidRequest, notFound, type RouterError } from '../http/errors.js';
import { sendError } from '../http/send-error.js';
import { ollamaErrorBody, ollamaRefused } from './errors.js';
import { PULLING_MANIFEST, PullProgressToOllama, type OllamaPullLine } from './pull-progress.js';
import { NDJSON, sendJson } from './route.js';

/** What the Ollama routes need of llmtray's pulls (core/pull's PullManager is one). */
export interface OllamaPulls {
  start(name: string): Promise<PullView>;
  readonly onDidChange: Event<PullView>;
  finished(id: string): Promise<PullView> | undefined;
  cancel(idOrName: string): Promise<PullView>;
  remove(idOrName: string): Promise<{ removed: string[] }>;
}

/** The fields of Ollama's PullRequest llmtray reads; every other field is refused by name. */
const PULL_FIELDS = new Set(['model', 'name', 'insecure', 'stream']);
const HUB_PREFIX = /^(?:https?:\/\/)?(?:hf\.co|huggingface\.co)\//i;
const LATEST = ':latest';
const EXAMPLE = 'hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M';

/** The body's model name and whether to stream, or the refusal naming the field. */
export function readPullBody(body: Record<string, unknown>): { ok: true; name: string; stream: boolean } | { ok: false; error: RouterError } {
  const unknown = Object.keys(body).find((field) => !PULL_FIELDS.has(field));
  if (unknown !== undefined) return { ok: false, error: ollamaRefused(unknown, `llmtray's /api/pull reads ${[...PULL_FIELDS].join(', ')} only`) };
  const model = body['model'] ?? body['name'];
  if (typeof model !== 'string' || model.trim() === '') return { ok: false, error: invalidRequest('model', `'model' is required: the model to pull, as ${EXAMPLE}.`) };
  const stream = body['stream'] ?? true;
  if (typeof stream !== 'boolean') return { ok: false, error: invalidRequest('stream', `'stream' must be true or false.`) };
  // Ollama's `insecure` lets its registry be plain http; llmtray's Hub is HF_ENDPOINT as set, so either value means the same pull.
  const insecure = body['insecure'] ?? false;
  if (typeof insecure !== 'boolean') return { ok: false, error: invalidRequest('insecure', `'insecure' must be true or false.`) };
  const name = hubPullName(model.trim());
  return name.ok ? { ok: true, name: name.name, stream } : name;
}

/** An `hf.co/` name as the pull manager takes it (`:latest`, Ollama's default tag, is the repo's default quant), or the refusal of any other. */
export function hubPullName(model: string): { ok: true; name: string } | { ok: false; error: RouterError } {
  if (!HUB_PREFIX.test(model)) {
    return {
      ok: false,
      error: invalidRequest(
        'model',
        `'${model}' is a name from Ollama's library, which llmtray does not pull from: llmtray pulls GGUF models from Hugging Face. Pull an hf.co/ name instead, as hf.co/OWNER/REPO:QUANT (e.g. ${EXAMPLE}).`,
      ),
    };
  }
  return { ok: true, name: model.endsWith(LATEST) ? model.slice(0, -LATEST.length) : model };
}

/** Answers `/api/pull` once its body is read. Never rejects. */
export async function servePull(res: ServerResponse, pulls: OllamaPulls, body: Record<string, unknown>, startedByOllama: Map<string, number>): Promise<void> {
  const read = readPullBody(body);
  if (!read.ok) return sendError(res, read.error, ollamaErrorBody);
  const write = (lines: readonly OllamaPullLine[]): void => {
    if (read.stream && lines.length > 0 && !res.destroyed) res.write(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  };
  if (read.stream) {
    res.writeHead(200, { 'content-type': NDJSON });
    // Said before the Hub is asked, as Ollama says it before it fetches the manifest.
    write([PULLING_MANIFEST]);
  }
  // Every view from now: the pull's first ones may fire before start() returns its id.
  const seen: PullView[] = [];
  let follow: ((view: PullView) => void) | null = null;
  const unsubscribe = pulls.onDidChange((view) => (follow === null ? seen.push(view) : follow(view)));
  const askedAt = Date.now();
  let view: PullView;
  try {
    view = await pulls.start(read.name);
  } catch (error) {
    unsubscribe();
    const refusal = refusalOf(error);
    // In a stream that already said 200, the refusal is its last line, as Ollama ends one.
    if (read.stream) return void res.end(`${JSON.stringify(ollamaErrorBody(refusal))}\n`);
    return sendError(res, refusal, ollamaErrorBody);
  }
  const key = view.id.toLowerCase();
  const progress = new PullProgressToOllama();
  const ours = (candidate: PullView): boolean => candidate.id.toLowerCase() === key;
  // Started by this request (not joined): a pull a person started elsewhere is never cancelled from here.
  const mine = view.startedAt >= askedAt || startedByOllama.has(key);
  if (mine) startedByOllama.set(key, (startedByOllama.get(key) ?? 0) + 1);
  let released = false;
  /** This request stops following; the last Ollama follower of a pull an Ollama request started leaving early cancels it. */
  const release = (leftEarly: boolean): void => {
    if (!mine || released) return;
    released = true;
    const left = (startedByOllama.get(key) ?? 1) - 1;
    if (left > 0) return void startedByOllama.set(key, left);
    startedByOllama.delete(key);
    if (leftEarly && !isFinished(view)) pulls.cancel(view.id).catch(() => undefined);
  };
  res.on('close', () => release(!res.writableFinished));
  write(progress.next(view));
  for (const earlier of seen.filter(ours)) write(progress.next(earlier));
  follow = (later) => {
    if (!ours(later)) return;
    view = later;
    write(progress.next(later));
  };
  view = (await pulls.finished(view.id)) ?? view;
  unsubscribe();
  release(false);
  const lines = progress.next(view);
  if (read.stream) return void res.end(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  const failure = failureOf(view);
  if (failure !== null) return sendError(res, failure, ollamaErrorBody);
  sendJson(res, { status: 'success' });
}

/** Why a pull that ended did not give a served model, with a status; null when it did. */
function failureOf(view: PullView): RouterError | null {
  if (view.state === 'done' && view.servedAs !== undefined) return null;
  const message = view.state === 'done' ? view.message : `the pull of ${view.id} ${view.state === 'failed' ? 'failed' : 'was cancelled'}: ${view.message}`;
  return { status: view.state === 'cancelled' ? 409 : 502, source: 'router', type: 'server_error', code: 'pull_failed', param: 'model', message };
}

function refusalOf(error: unknown): RouterError {
  if (error instanceof PullRefused) return { status: error.status, source: 'router', type: 'invalid_request_error', code: error.code, param: 'model', message: error.message };
  return { status: 500, source: 'router', type: 'server_error', code: 'internal_error', param: null, message: `llmtray's pull failed: ${errorMessage(error)}` };
}

/** Answers `/api/delete` once its body is read: removes a model llmtray pulled, and only that. Never rejects. */
export async function serveDelete(res: ServerResponse, pulls: OllamaPulls, body: Record<string, unknown>): Promise<void> {
  const model = body['model'] ?? body['name'];
  const unknown = Object.keys(body).find((field) => field !== 'model' && field !== 'name');
  if (unknown !== undefined) return sendError(res, ollamaRefused(unknown, "llmtray's /api/delete reads model (or name) only"), ollamaErrorBody);
  if (typeof model !== 'string' || model.trim() === '') return sendError(res, invalidRequest('model', `'model' is required: the pulled model to delete.`), ollamaErrorBody);
  const name = model.trim().endsWith(LATEST) ? model.trim().slice(0, -LATEST.length) : model.trim();
  try {
    await pulls.remove(name);
    // Ollama answers a delete with 200 and no body.
    res.writeHead(200, { 'content-length': 0 });
    res.end();
  } catch (error) {
    if (error instanceof PullRefused && error.status === 404) {
      return sendError(res, { ...notFound(`model "${model}" not found among the models llmtray pulled: llmtray deletes only models it pulled (${error.message}) A model from a model folder or config.yaml is the person's file; remove it there.`), param: 'model' }, ollamaErrorBody);
    }
    sendError(res, refusalOf(error), ollamaErrorBody);
  }
}
