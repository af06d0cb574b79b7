// What clients made for llama.cpp's router mode (`llama-server --models-dir`) ask of it, so they
// work against llmtray unchanged: each model's `status` object in /v1/models, `POST /models/load`
// and `/models/unload` with `{"model": …}`, and llama-server's own routes routed by the body's
// `model` like the generation routes.
//
// Why here and not through the admin API: those clients know one base URL and the model
// names, not llmtray's admin token; the commands are the tray's own (the daemon passes its
// load and unload), guarded as the generation routes are (the Host check, client keys).
// llama-server's own routes go to an engine that serves them; the embedded engine serves only
// /tokenize and /apply-template (which the router itself counts tokens with), and the others
// are refused with a 404 naming the model and its engine rather than sent to fail there. Pure
// apart from sending.
import type http from 'node:http';
import type { ServerResponse } from 'node:http';
import type { CommandResult } from '../../contracts/commands.js';
import { isServing, type ModelStateName } from '../../contracts/model-status.js';
import type { EngineKind } from '../../contracts/snapshot.js';
import type { RouterError } from '../http/errors.js';
import { sendError } from '../http/send-error.js';
import { forwardToEngine, openAIAnswer, openAIErrorEvent, type ModelRequest } from '../engine/upstream.js';
import { parseBody } from '../openai/validate-request.js';

/** llama.cpp router mode's `status.value` for each of llmtray's states. */
export type LlamaRouterStatusValue = 'loaded' | 'loading' | 'unloaded';

/** The `status` object llama.cpp's router mode gives each model (tools/server/server-models.cpp). */
export interface LlamaRouterStatus {
  value: LlamaRouterStatusValue;
  /** Present (true) when its last launch failed and it is not serving. */
  failed?: true;
}

/**
 * A model's llama.cpp router-mode status from llmtray's state. Pure. Loaded is the contract's
 * serving (not a list of its own); a model in fallback is unloaded, as its own server is not up.
 */
export function llamaRouterStatus(state: ModelStateName): LlamaRouterStatus {
  const value: LlamaRouterStatusValue = isServing(state) ? 'loaded' : state === 'loading' ? 'loading' : 'unloaded';
  return state === 'failed' || state === 'quarantined' ? { value, failed: true } : { value };
}

/** The tray's load and unload of a model, as the daemon runs them for its other surfaces. */
export interface ModelCommands {
  load(modelId: string): Promise<CommandResult>;
  unload(modelId: string): Promise<CommandResult>;
}

export const MODEL_COMMAND_ROUTES: Record<string, keyof ModelCommands> = { '/models/load': 'load', '/models/unload': 'unload' };

/** llama-server's own routes, by the engine kinds that serve each. */
export const LLAMA_SERVER_ROUTES: Record<string, readonly EngineKind[]> = {
  '/completion': ['llama-server'],
  '/infill': ['llama-server'],
  '/rerank': ['llama-server'],
  '/v1/rerank': ['llama-server'],
  '/tokenize': ['llama-server', 'embedded'],
  '/detokenize': ['llama-server'],
  '/apply-template': ['llama-server', 'embedded'],
};

/** llama-server's routes that write text; the others tokenize, rerank or render a template. */
const GENERATING_ROUTES: ReadonlySet<string> = new Set(['/completion', '/infill']);
/** The routes an engine answers beside its slots: they never wait for a free one (ModelRequest.takesSlot). */
const SLOTLESS_ROUTES: ReadonlySet<string> = new Set(['/tokenize', '/detokenize', '/apply-template']);

/** Whether `path` is one of the routes this file serves outside /v1 (llama-server's, the model commands). */
export function isLlamaCompatPath(path: string): boolean {
  return MODEL_COMMAND_ROUTES[path] !== undefined || LLAMA_SERVER_ROUTES[path] !== undefined;
}

/** A request to one of llama-server's own routes: needs a `model` to be routed; the rest is the engine's to judge. */
export function llamaServerRouteRequest(agent: http.Agent, res: ServerResponse, path: string, raw: Buffer): ModelRequest | RouterError {
  const parsed = parseBody(raw, {}, {}, path);
  if (!parsed.ok) return parsed.error;
  const servedBy = LLAMA_SERVER_ROUTES[path] ?? [];
  return {
    model: parsed.model,
    streamError: parsed.body['stream'] === true ? openAIErrorEvent : null,
    generates: GENERATING_ROUTES.has(path),
    takesSlot: !SLOTLESS_ROUTES.has(path),
    send(claim, fallingBack, clientGone) {
      if (!servedBy.includes(claim.engine)) {
        sendError(res, {
          status: 404,
          source: 'router',
          type: 'invalid_request_error',
          code: 'route_not_served',
          param: null,
          message: `${path} is llama-server's own route, and '${claim.servedBy}' runs on the ${claim.engine} engine, which does not serve it (it serves ${routesOf(claim.engine)}). Run the model on llama-server (engine: llama-server in llmtray's config.yaml) to use it.`,
        });
        return Promise.resolve({ kind: 'answered' });
      }
      return forwardToEngine(agent, res, clientGone, claim, {
        path,
        body: fallingBack ? Buffer.from(JSON.stringify({ ...parsed.body, model: claim.servedBy })) : raw,
        shape: openAIAnswer(fallingBack ? claim.servedBy : null, claim.servedBy, null),
      });
    },
  };
}

function routesOf(engine: EngineKind): string {
  return Object.keys(LLAMA_SERVER_ROUTES)
    .filter((path) => LLAMA_SERVER_ROUTES[path]?.includes(engine))
    .join(', ');
}

/**
 * `POST /models/load` or `/models/unload` with `{"model": name}`: the tray's command for the
 * model that name resolves to, answered as llama.cpp answers it (`{"success": true}`), with the
 * command's sentence as `message`; a command that was not carried out is a 400 saying why.
 */
export async function runModelCommand(
  res: ServerResponse,
  raw: Buffer,
  command: keyof ModelCommands,
  commands: ModelCommands | undefined,
  resolve: (name: string) => string | undefined,
  unknown: (name: string) => RouterError,
): Promise<void> {
  const parsed = parseBody(raw, {}, {}, `POST /models/${command}`);
  if (!parsed.ok) return sendError(res, parsed.error);
  if (commands === undefined) {
    return sendError(res, { status: 501, source: 'router', type: 'invalid_request_error', code: 'not_supported', param: null, message: `POST /models/${command} is not served by this listener.` });
  }
  const modelId = resolve(parsed.model);
  if (modelId === undefined) return sendError(res, unknown(parsed.model));
  const result = await commands[command](modelId);
  if (!result.ok) return sendError(res, { status: 400, source: 'router', type: 'invalid_request_error', code: 'command_refused', param: 'model', message: result.message });
  const body = JSON.stringify({ success: true, model: modelId, message: result.message });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
