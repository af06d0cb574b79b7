// The admin API in one table: each call's name, HTTP method, path, parameters and answer.
//
// Everything that speaks the admin API derives from this table (GitHub Desktop's one-map IPC
// contract, applied to HTTP as well): the daemon's HTTP routes (core/admin/admin-http.ts), the
// service that answers them (AdminService implements AdminApi), the dashboard's HTTP bridge
// and the CLI (core/admin-client/admin-http-client.ts), and the Electron IPC channels, their argument checks and
// the preload (electron/ipc-contract.ts). So a new call is one entry here plus its answer in
// AdminService; every transport then carries it, and forgetting the answer is a compile error.
//
// Every input is a parameter, parsed by the same ParamSpec whichever transport carried it (a
// path segment, or for a parameter the path does not name a query parameter, over HTTP; an IPC
// argument in Electron), so both refuse the same values with the same sentence. A query
// parameter may be absent (its spec takes undefined); a path's may not. No call takes a body. The event stream (`GET /api/events`,
// Server-Sent Events) is not a call: it is ADMIN_EVENTS_PATH, carried as an IPC push channel.
import { MODEL_COMMANDS, isModelCommand, type CommandResult, type ModelCommand, type ModelLogsResponse } from './commands.js';
import type { HubModelHit, PullView, RepoOffer } from './hub/pulls.js';
import type { Snapshot } from './snapshot.js';
import { STATUS_FILTER, type ActivityAnswer } from './requests/request-record.js';

/** How one parameter is read from the wire; `expected` completes "expected …, got …". */
export interface ParamSpec<T> {
  parse(value: unknown): { ok: true; value: T } | { ok: false; expected: string };
}

/** A call of the admin API. `Answer` is a type only: nothing reads it at run time. */
export interface AdminRoute<Params, Answer> {
  method: 'GET' | 'POST';
  /** The path, with `:name` standing for the parameter `name` (one whole segment each). */
  path: string;
  params: { [K in keyof Params]: ParamSpec<Params[K]> };
  /**
   * The HTTP status of an answer, for a call whose answer can say "no" in its own shape (a
   * CommandResult with ok: false). Absent: 200. Refusals that are not answers (a bad
   * parameter, an unknown model's logs) are AdminRefusal, whatever the call.
   */
  status?: (answer: Answer) => number;
  /** Carries `Answer` in the type; always undefined. */
  readonly answer?: Answer;
}

/** Longer than any id the catalog makes (slugs of file names), short enough to refuse junk. */
export const MAX_MODEL_NAME_LENGTH = 256;

/** A model's id or alias as a person typed it; the service resolves it (findModelByName). */
export const MODEL_NAME: ParamSpec<string> = {
  parse(value) {
    if (typeof value !== 'string' || value.length === 0) return { ok: false, expected: 'a model id or alias (non-empty text)' };
    if (value.length > MAX_MODEL_NAME_LENGTH) return { ok: false, expected: `a model id or alias of at most ${MAX_MODEL_NAME_LENGTH} characters` };
    return { ok: true, value };
  },
};

/** A name to pull (`hf.co/OWNER/REPO:QUANT`, `OWNER/REPO`, `OWNER/REPO/FILE.gguf`) or a pull's id; core/contracts/hub/names.ts reads it. */
export const PULL_NAME: ParamSpec<string> = {
  parse(value) {
    if (typeof value !== 'string' || value.trim().length === 0) return { ok: false, expected: 'a model on the Hugging Face Hub, as hf.co/OWNER/REPO:QUANT (non-empty text)' };
    if (value.length > MAX_MODEL_NAME_LENGTH) return { ok: false, expected: `a name of at most ${MAX_MODEL_NAME_LENGTH} characters` };
    return { ok: true, value };
  },
};

/** Words to search the Hub's model names for. */
export const HUB_QUERY: ParamSpec<string> = {
  parse(value) {
    if (typeof value !== 'string' || value.trim().length === 0) return { ok: false, expected: 'words to search the Hugging Face Hub for (non-empty text)' };
    if (value.length > MAX_MODEL_NAME_LENGTH) return { ok: false, expected: `a search of at most ${MAX_MODEL_NAME_LENGTH} characters` };
    return { ok: true, value: value.trim() };
  },
};

export const MODEL_COMMAND: ParamSpec<ModelCommand> = {
  parse(value) {
    return isModelCommand(value) ? { ok: true, value } : { ok: false, expected: `one of ${MODEL_COMMANDS.join(', ')}` };
  },
};

/** A filter of text that may be absent (a query parameter): absent or a non-empty text. */
function optionalText(expected: string, pattern: RegExp = /^.+$/): ParamSpec<string | undefined> {
  return {
    parse(value) {
      if (value === undefined) return { ok: true, value: undefined };
      if (typeof value !== 'string' || value.length > MAX_MODEL_NAME_LENGTH || !pattern.test(value)) return { ok: false, expected };
      return { ok: true, value };
    },
  };
}

/** The filters of getActivity: each absent means any. */
export const ACTIVITY_FILTERS = {
  model: optionalText('a model id (the one asked for or the one that answered)'),
  status: optionalText('an HTTP status (429) or a class of them (4xx)', STATUS_FILTER),
  client: optionalText("a client key's name, or local"),
};

/** 200 done, 409 declined by the action, 404 unknown model, 500 the action threw. */
export function commandStatus(result: CommandResult): number {
  if (result.ok) return 200;
  switch (result.code) {
    case 'unknown_model':
      return 404;
    case 'action_failed':
      return 500;
    case undefined:
      return 409;
  }
}

function route<Answer>() {
  return <Params>(spec: Omit<AdminRoute<Params, Answer>, 'answer'>): AdminRoute<Params, Answer> => spec;
}

export const ADMIN_ROUTES = {
  /** Everything a person sees, in one value. */
  getSnapshot: route<Snapshot>()({ method: 'GET', path: '/api/state', params: {} }),
  /** Runs a command for a model; declining (409) and failing (404, 500) are answers too. */
  runCommand: route<CommandResult>()({
    method: 'POST',
    path: '/api/models/:id/:command',
    params: { id: MODEL_NAME, command: MODEL_COMMAND },
    status: commandStatus,
  }),
  /** A model server's recent log lines, oldest first; an unknown model is refused (404). */
  getLogs: route<ModelLogsResponse>()({ method: 'GET', path: '/api/models/:id/logs', params: { id: MODEL_NAME } }),
  // Pulls from the Hugging Face Hub (core/pull). Under /api/downloads, because Ollama's API owns
  // /api/pull, /api/delete and friends on the same port (DESIGN.md, "The router"). The name is one
  // percent-encoded segment (its slashes too). Refusals (an unknown repo or quant, a gate, no room
  // on the disk) are AdminRefusals whose message says what to do.
  /** Starts pulling a model (or joins its pull), answering once the Hub has said which files it means. */
  startPull: route<PullView>()({ method: 'POST', path: '/api/downloads/:name', params: { name: PULL_NAME } }),
  /** Every pull of this run, newest first. */
  listPulls: route<PullView[]>()({ method: 'GET', path: '/api/downloads', params: {} }),
  /** Stops a pull (by its id or the name it was started with); its bytes stay for a later pull to resume. Answers once it stopped. */
  cancelPull: route<PullView>()({ method: 'POST', path: '/api/downloads/:name/cancel', params: { name: PULL_NAME } }),
  /** Removes a model llmtray pulled: its snapshot links and the blobs it fetched that nothing else uses; never a file it did not write. */
  deletePull: route<{ removed: string[] }>()({ method: 'POST', path: '/api/downloads/:name/delete', params: { name: PULL_NAME } }),
  // The Hub as Add model browses it, before anything is downloaded (core/pull/hub-browse.ts).
  /** GGUF models on the Hub whose name holds the query, most downloaded first. */
  searchHub: route<HubModelHit[]>()({ method: 'GET', path: '/api/hub/search/:query', params: { query: HUB_QUERY } }),
  /** A repo's quants, largest first, each marked by how it would run here (whole on a GPU, partly in host RAM, CPU only, too big). */
  offerRepo: route<RepoOffer>()({ method: 'GET', path: '/api/hub/repos/:repo', params: { repo: PULL_NAME } }),
  /** The requests the daemon holds (activity.keep), newest first, filtered by model, status and client (query parameters). */
  getActivity: route<ActivityAnswer>()({ method: 'GET', path: '/api/activity', params: ACTIVITY_FILTERS }),
};

/** `GET`: SnapshotUpdated first, then every AdminEvent, as Server-Sent Events. */
export const ADMIN_EVENTS_PATH = '/api/events';

export type AdminRoutes = typeof ADMIN_ROUTES;
export type AdminCallName = keyof AdminRoutes;
export const ADMIN_CALL_NAMES = Object.keys(ADMIN_ROUTES) as AdminCallName[];

export type AdminParams<K extends AdminCallName> = AdminRoutes[K] extends AdminRoute<infer P, infer _A> ? P : never;
export type AdminAnswer<K extends AdminCallName> = AdminRoutes[K] extends AdminRoute<infer _P, infer A> ? A : never;

/** The parameters whose values may be absent (query parameters) are optional keys. */
type OptionalWhereUndefined<P> = { [K in keyof P as undefined extends P[K] ? never : K]: P[K] } & { [K in keyof P as undefined extends P[K] ? K : never]?: P[K] };

/** A call's arguments: its parameters, or nothing for a call that has none or only optional ones. */
export type AdminArgs<K extends AdminCallName> = keyof AdminParams<K> extends never
  ? [params?: AdminParams<K>]
  : {} extends OptionalWhereUndefined<AdminParams<K>>
    ? [params?: OptionalWhereUndefined<AdminParams<K>>]
    : [params: AdminParams<K>];

/**
 * The admin API as every transport offers it: one method per call. Each resolves with the
 * call's answer and rejects with an AdminRefusal when refused, or an Error when the transport
 * failed (the daemon unreachable).
 */
export type AdminApi = { [K in AdminCallName]: (...args: AdminArgs<K>) => Promise<AdminAnswer<K>> };

/**
 * A refusal that is not a call's answer: an invalid parameter (400), no token (401), an
 * unknown model's logs (404), a wrong method (405). Over HTTP its status and AdminErrorBody;
 * over IPC only its message crosses, which is written to stand alone.
 */
export class AdminRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'AdminRefusal';
  }
}

/**
 * The call's parameters from raw values, each through its ParamSpec; unknown names are
 * refused so that a typo is not silently ignored. `raw` is an IPC argument or the path's
 * captured segments.
 */
export function parseParams<K extends AdminCallName>(name: K, raw: unknown): AdminParams<K> {
  const specs = ADMIN_ROUTES[name].params as Record<string, ParamSpec<unknown>>;
  const given = raw ?? {};
  if (typeof given !== 'object' || Array.isArray(given)) throw new AdminRefusal(400, 'invalid_param', `${name} takes its parameters as an object; got ${describe(raw)}`);
  const values = given as Record<string, unknown>;
  const extra = Object.keys(values).filter((key) => !(key in specs));
  if (extra.length > 0) {
    const known = Object.keys(specs);
    throw new AdminRefusal(400, 'invalid_param', `${name} has no parameter ${extra.map((key) => `'${key}'`).join(', ')}; ${known.length === 0 ? 'it takes none' : `it takes ${known.join(', ')}`}`);
  }
  const parsed: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(specs)) {
    const result = spec.parse(values[key]);
    if (!result.ok) throw new AdminRefusal(400, 'invalid_param', `${name}: ${key}: expected ${result.expected}, got ${describe(values[key])}`);
    if (result.value !== undefined) parsed[key] = result.value;
  }
  return parsed as AdminParams<K>;
}

/** Calls `name` on any AdminApi with parsed parameters: the one dispatch every server side shares. */
export function callAdmin<K extends AdminCallName>(api: AdminApi, name: K, params: AdminParams<K>): Promise<AdminAnswer<K>> {
  return (api[name] as (params: AdminParams<K>) => Promise<AdminAnswer<K>>)(params);
}

/** The HTTP status of a call's answer: the route's own rule (runCommand's 409 and friends), else 200. */
export function answerStatus<K extends AdminCallName>(name: K, answer: AdminAnswer<K>): number {
  const status = (ADMIN_ROUTES[name] as AdminRoute<unknown, AdminAnswer<K>>).status;
  return status === undefined ? 200 : status(answer);
}

/**
 * The path of a call with its parameters filled in: those the path names each percent-encoded
 * as one segment, the others (given ones only) as its query.
 */
export function pathFor<K extends AdminCallName>(name: K, ...[params]: AdminArgs<K>): string {
  const values = (params ?? {}) as Record<string, unknown>;
  const pattern = ADMIN_ROUTES[name].path;
  const path = pattern.replace(/:([a-z]+)/gi, (_whole, key: string) => encodeURIComponent(String(values[key])));
  const query = Object.entries(values)
    .filter(([key, value]) => value !== undefined && !pattern.includes(`:${key}`))
    .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`);
  return query.length === 0 ? path : `${path}?${query.join('&')}`;
}

/** A short, safe rendering of an unexpected value for an error message. */
function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value.length > 40 ? `${value.slice(0, 40)}…` : value}'`;
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}
