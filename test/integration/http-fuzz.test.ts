// Bad input, generated: 10,000 requests from fast-check against a real `llmtray serve` process,
// over bare sockets so that nothing is off limits — any method, request target, Host, Origin,
// credentials, content type, body (JSON, near-JSON, deep nesting, random bytes, invalid UTF-8,
// up to a megabyte), and framing (exact, chunked, a content-length that lies either way, a
// chunked body cut short), plus bytes that are not HTTP at all.
//
// What must hold for every one of them:
// - the answer is served (2xx) or refused with a 4xx/5xx whose body is an error in its
//   surface's shape: Anthropic's ({ type: 'error', error: { type, message } }) under
//   /v1/messages, whose SDKs read nothing else; Ollama's ({ error: "…" }) on its /api/ paths;
//   elsewhere { error: { message, code } } (OpenAI's for the rest of /v1 and the guards, the
//   admin API's elsewhere; a command's own CommandResult for its refusals). No answer at all
//   only for a request that never finished arriving;
// - a 2xx under /api needs the admin token, and one under /v1 or on Ollama's /api/ paths a
//   client key (no way around them);
// - a 2xx for a file is byte for byte a file of the dashboard's folder: nothing outside it is
//   served, however the path climbs or encodes;
// - no answer carries the admin token or a client key;
// - the daemon is still up afterwards, and answers. It runs with --unhandled-rejections=strict
//   (daemon-process.ts), so a rejection nothing handles would have ended it.
//
// The daemon's one model has no file: it is refused at once (quarantined), so requests for it
// exercise the router's refusals without loading anything, and the commands run for real.
// What it cannot see from outside is a file read whose content is not served; what it checks
// is that none is served. FUZZ_RUNS=N runs another count (a longer soak).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';
import { rawExchange, type RawAnswer } from '../support/raw-http.js';
import { isOllamaPath } from '../../core/router/ollama/serve.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);
const CLIENT_KEY = 'fuzz-client-key-7d1e93b0';
const STATIC_ROOT = resolve(import.meta.dirname, '..', '..', 'dist', 'renderer');

let dir: string;
let daemon: DaemonProcess;
/** Every file of the dashboard's folder, by content: what a served file may be. */
let staticFiles: Buffer[];
let assetPaths: string[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-fuzz-'));
  const configPath = join(dir, 'config.yaml');
  await writeFile(
    configPath,
    `listen:\n  clientKeys:\n    - { name: fuzz, key: ${CLIENT_KEY} }\nactivationWait: 1s\nswapTurn: 500ms\nmodelDirs: []\nmodels:\n  - { id: broken, path: ${JSON.stringify(join(dir, 'missing.gguf'))}, aliases: [old-name] }\n`,
  );
  daemon = await startDaemonProcess({ config: configPath, startTimeoutMs: 60_000 });
  const files = listFiles(STATIC_ROOT);
  staticFiles = files.map((file) => readFileSync(file));
  assetPaths = files.map((file) => `/${file.slice(STATIC_ROOT.length + 1).split('\\').join('/')}`);
});

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (dir) await rm(dir, { recursive: true, force: true });
});

function listFiles(root: string): string[] {
  return readdirSync(root).flatMap((name) => {
    const path = join(root, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });
}

type Framing = 'exact' | 'chunked' | 'longer' | 'shorter' | 'truncated-chunked' | 'none';

interface FuzzRequest {
  method: string;
  target: string;
  headers: [string, string][];
  body: Buffer;
  framing: Framing;
  /** When set, these bytes are sent instead of a request. */
  garbage: Buffer | null;
}

/** Every route there is, with the method it takes, so that most requests reach it. */
const KNOWN_ROUTES: [string, string][] = [
  ['POST', '/v1/chat/completions'], ['POST', '/v1/completions'], ['POST', '/v1/embeddings'], ['GET', '/v1/models'], ['GET', '/v1/models/broken'],
  ['GET', '/v1/models/OLD-NAME'], ['GET', '/v1'], ['POST', '/v1/messages'], ['POST', '/v1/messages/count_tokens'], ['GET', '/v1/messages'],
  ['POST', '/v1/messages/batches'], ['OPTIONS', '/v1/messages'], ['POST', '/v1/responses'], ['GET', '/v1/responses'], ['GET', '/api/state'], ['GET', '/api/events'], ['POST', '/api/models/broken/pin'],
  ['POST', '/api/models/broken/unpin'], ['POST', '/api/models/Broken/load'], ['POST', '/api/models/old-name/unload'], ['POST', '/api/models/broken/retry'],
  ['GET', '/api/models/broken/logs'], ['POST', '/api/models/nope/pin'], ['GET', '/api/models/nope/logs'], ['POST', '/api/models/broken/delete'],
  ['POST', '/api/session'], ['GET', '/api'], ['GET', '/metrics'], ['GET', '/'], ['GET', '/index.html'], ['OPTIONS', '/v1/chat/completions'],
  // Ollama's API, which shares /api/ with the admin API and is guarded like /v1.
  ['GET', '/api/version'], ['GET', '/api/tags'], ['GET', '/api/ps'], ['POST', '/api/show'], ['POST', '/api/chat'], ['POST', '/api/generate'],
  ['POST', '/api/embed'], ['POST', '/api/embeddings'], ['POST', '/api/pull'], ['DELETE', '/api/delete'], ['POST', '/api/blobs/sha256:00'],
];
const CLIMBING_PATHS = [
  '/../core/cli.js', '/..%2fcore%2fcli.js', '/%2e%2e/core/cli.js', '/%2E%2E%2Fcore%2Fcli.js', '/assets/../../core/cli.js',
  '/assets/..%2f..%2fcore%2fcli.js', '/..%5ccore%5ccli.js', '/..\\core\\cli.js', '/%00', '/index.html%00.js', '/%252e%252e/core/cli.js',
  '//etc/passwd', '/%2fetc%2fpasswd', '/assets/%c0%ae%c0%ae/%c0%ae%c0%ae/core/cli.js', '/../../../../../../etc/passwd',
  '/api/models/..%2f..%2fetc/logs', '/api/models/%2e%2e/pin', '/.%2e/.%2e/core/cli.js', '/assets/%2e%2e%5c%2e%2e%5ccore%5ccli.js',
];

const segment = fc.oneof(
  fc.constantFrom('v1', 'api', 'models', 'messages', 'count_tokens', 'broken', 'logs', 'pin', 'assets', 'index.html', '..', '.', '%2e%2e', '%2f', '%5c', '%00', '%', '%zz', ''),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@%-]{0,16}$/),
);
const query = fc.oneof(fc.constant(''), fc.string({ maxLength: 20 }).map((text) => `?${encodeURIComponent(text)}`), fc.constant('?token=x&a=%ZZ'));

const standardMethod = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD');
const anyMethod = fc.oneof(
  { weight: 9, arbitrary: standardMethod },
  { weight: 1, arbitrary: fc.oneof(fc.constantFrom('TRACE', 'CONNECT', 'PROPFIND', 'get', 'G ET'), fc.stringMatching(/^[A-Z]{1,10}$/)) },
);

/** A method and a request target: mostly a real route with its own method, else anything. */
function methodsAndTargets(port: number): fc.Arbitrary<{ method: string; target: string }> {
  const known = fc.tuple(fc.constantFrom(...KNOWN_ROUTES, ...assetPaths.map((path): [string, string] => ['GET', path])), query, fc.nat(3), anyMethod);
  const other = fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...CLIMBING_PATHS) },
    { weight: 3, arbitrary: fc.tuple(fc.array(segment, { minLength: 1, maxLength: 6 }), query).map(([parts, q]) => `/${parts.join('/')}${q}`) },
    { weight: 1, arbitrary: fc.constantFrom('*', `http://127.0.0.1:${port}/v1/models`, `http://attacker.example/api/state`, 'v1/models', '/v1/models#frag') },
  );
  return fc.oneof(
    { weight: 5, arbitrary: known.map(([[method, path], q, roll, random]) => ({ method: roll === 0 ? random : method, target: path + q })) },
    { weight: 3, arbitrary: fc.tuple(anyMethod, other).map(([method, target]) => ({ method, target })) },
  );
}

const printable = (maxLength: number) => fc.stringMatching(new RegExp(`^[\\x20-\\x7e]{0,${maxLength}}$`));
const token = fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/);

function headerSets(port: number, adminToken: string): fc.Arbitrary<[string, string][]> {
  // Sent `present` times to every `absent` times left out.
  const optional = (name: string, values: fc.Arbitrary<string>, present: number, absent = 1) =>
    fc.oneof({ weight: present, arbitrary: values.map((value): [string, string] | undefined => [name, value]) }, { weight: absent, arbitrary: fc.constant(undefined) });
  // Mostly what a real client sends (so requests get past the guards and reach the routes), the rest hostile.
  const mostly = <T,>(usual: fc.Arbitrary<T>, other: fc.Arbitrary<T>) => fc.oneof({ weight: 9, arbitrary: usual }, { weight: 1, arbitrary: other });
  return fc
    .tuple(
      optional('Host', mostly(fc.constantFrom(`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`), fc.oneof(fc.constantFrom('attacker.example', `127.0.0.1.attacker.example:${port}`, '', `127.0.0.1:${port}, evil`), printable(30))), 19),
      optional('Authorization', mostly(fc.constant(`Bearer ${adminToken}`), fc.oneof(fc.constantFrom(`bearer ${adminToken}`, 'Bearer ', 'Bearer wrong', `Basic ${Buffer.from(`x:${adminToken}`).toString('base64')}`, adminToken), printable(40))), 4),
      optional('x-api-key', mostly(fc.constant(CLIENT_KEY), fc.oneof(fc.constant(adminToken), printable(40))), 1),
      optional('anthropic-version', fc.oneof(fc.constant('2023-06-01'), printable(12)), 1, 2),
      optional('Origin', fc.oneof(fc.constantFrom(`http://127.0.0.1:${port}`, 'https://evil.example', 'null', 'http://localhost:3000'), printable(30)), 1, 8),
      optional('Content-Type', fc.oneof(fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-16', 'multipart/form-data; boundary=x'), printable(30)), 2),
      optional('Cookie', fc.constantFrom(`llmtray_session=${adminToken}`, `llmtray_session_${port}=${adminToken}`), 1, 4),
      optional('Content-Encoding', fc.constantFrom('gzip', 'br', 'identity', 'x-unknown'), 1, 4),
      fc.array(fc.tuple(token, printable(60)), { maxLength: 4 }),
      optional('X-Large', fc.constantFrom(9_000, 20_000).map((size) => 'x'.repeat(size)), 1, 40),
    )
    .map(([host, auth, apiKey, version, origin, type, cookie, encoding, extra, large]) =>
      [host, auth, apiKey, version, origin, type, cookie, encoding, ...extra, large].filter((header): header is [string, string] => header !== undefined),
    );
}

const anyModel = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('broken', 'Broken', 'old-name', 'nope', '', ' ') },
  { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 })) },
);
const message = fc.record(
  { role: fc.oneof(fc.constantFrom('user', 'system', 'assistant', 'tool', 'developer'), fc.string({ maxLength: 8 })), content: fc.oneof(fc.string({ maxLength: 40 }), fc.constant(null), fc.jsonValue({ maxDepth: 2 })) },
  { requiredKeys: [] },
);
const chatLike = fc
  .record(
    {
      model: anyModel,
      messages: fc.oneof(fc.array(message, { maxLength: 3 }), fc.jsonValue({ maxDepth: 2 })),
      prompt: fc.oneof(fc.string({ maxLength: 20 }), fc.array(fc.integer(), { maxLength: 4 })),
      input: fc.oneof(fc.string({ maxLength: 20 }), fc.array(fc.string(), { maxLength: 3 })),
      stream: fc.oneof(fc.boolean(), fc.jsonValue({ maxDepth: 1 })),
      max_tokens: fc.oneof(fc.integer(), fc.double(), fc.string({ maxLength: 4 })),
      n: fc.integer({ min: -2, max: 5 }),
    },
    { requiredKeys: ['model', 'messages'] },
  )
  .map((value) => Buffer.from(JSON.stringify(value)));

// Anthropic's Messages API: mostly a request its checks (core/router/anthropic/request.ts) accept, so that
// it gets past them to the model (here refused: quarantined, or unknown); each field is bent on
// its own now and then, so that every check is met too.
const usually = (valid: fc.Arbitrary<unknown>, bent: fc.Arbitrary<unknown>) => fc.oneof({ weight: 9, arbitrary: valid }, { weight: 1, arbitrary: bent });
const textBlock = fc.record({ type: fc.constant('text'), text: fc.string({ maxLength: 40 }) });
const contentBlock = fc.oneof(
  { weight: 4, arbitrary: textBlock },
  // Passes the checks, refused by the translation: a block of another kind, as a client sends it.
  { weight: 1, arbitrary: fc.record({ type: fc.constantFrom('image', 'tool_use', 'tool_result', 'thinking', 'document'), text: fc.jsonValue({ maxDepth: 1 }) }, { requiredKeys: ['type'] }) },
);
const anthropicMessage = usually(
  fc.record({ role: fc.constantFrom('user', 'assistant'), content: fc.oneof(fc.string({ maxLength: 40 }), fc.array(contentBlock, { minLength: 1, maxLength: 3 })) }),
  fc.record(
    {
      role: fc.oneof(fc.constantFrom('system', 'tool', 'user'), fc.string({ maxLength: 8 })),
      content: fc.oneof(fc.constant(null), fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 2 }), fc.record({ type: fc.constant('text'), text: fc.jsonValue({ maxDepth: 1 }) }).map((block) => [block])),
    },
    { requiredKeys: [] },
  ),
);
const messagesLike = fc
  .record(
    {
      model: anyModel,
      messages: usually(fc.array(anthropicMessage, { minLength: 1, maxLength: 3 }), fc.oneof(fc.constant([]), fc.jsonValue({ maxDepth: 2 }))),
      // An absent max_tokens (undefined is left out of the JSON) is refused on /v1/messages only.
      max_tokens: usually(fc.integer({ min: 1, max: 4096 }), fc.oneof(fc.constant(undefined), fc.integer({ max: 0 }), fc.double(), fc.string({ maxLength: 4 }))),
      system: usually(fc.oneof(fc.string({ maxLength: 20 }), fc.array(textBlock, { maxLength: 2 })), fc.jsonValue({ maxDepth: 1 })),
      stream: usually(fc.boolean(), fc.jsonValue({ maxDepth: 1 })),
      stop_sequences: usually(fc.array(fc.string({ maxLength: 6 }), { maxLength: 2 }), fc.jsonValue({ maxDepth: 1 })),
      top_k: usually(fc.nat(50), fc.oneof(fc.integer({ max: -1 }), fc.double())),
      tools: fc.array(fc.record({ name: fc.string({ maxLength: 8 }), input_schema: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }), { maxLength: 2 }),
    },
    { requiredKeys: ['model', 'messages', 'max_tokens'] },
  )
  .map((value) => Buffer.from(JSON.stringify(value)));

/** A Responses API request: input items of every kind the translation takes or refuses, and fields it refuses by name. */
const responsesItem = fc.oneof(
  fc.record({ role: fc.oneof(fc.constantFrom('user', 'system', 'developer', 'assistant'), fc.string({ maxLength: 8 })), content: fc.oneof(fc.string({ maxLength: 40 }), fc.array(fc.record({ type: fc.constantFrom('input_text', 'output_text', 'input_image', 'refusal'), text: fc.jsonValue({ maxDepth: 1 }) }, { requiredKeys: ['type'] }), { maxLength: 3 }), fc.jsonValue({ maxDepth: 1 })) }, { requiredKeys: [] }),
  fc.record({ type: fc.constant('function_call'), call_id: fc.jsonValue({ maxDepth: 1 }), name: fc.string({ maxLength: 8 }), arguments: fc.oneof(fc.string({ maxLength: 20 }), fc.jsonValue({ maxDepth: 1 })) }, { requiredKeys: ['type'] }),
  fc.record({ type: fc.constant('function_call_output'), call_id: fc.string({ maxLength: 8 }), output: fc.oneof(fc.string({ maxLength: 20 }), fc.jsonValue({ maxDepth: 2 })) }, { requiredKeys: ['type'] }),
  fc.record({ type: fc.oneof(fc.constantFrom('reasoning', 'item_reference', 'message'), fc.string({ maxLength: 8 })) }),
);
const responsesLike = fc
  .record(
    {
      model: anyModel,
      input: usually(fc.oneof(fc.string({ maxLength: 40 }), fc.array(responsesItem, { minLength: 1, maxLength: 3 })), fc.jsonValue({ maxDepth: 2 })),
      instructions: usually(fc.string({ maxLength: 20 }), fc.jsonValue({ maxDepth: 1 })),
      max_output_tokens: usually(fc.integer({ min: 1, max: 4096 }), fc.oneof(fc.integer({ max: 0 }), fc.double(), fc.string({ maxLength: 4 }))),
      stream: usually(fc.boolean(), fc.jsonValue({ maxDepth: 1 })),
      tools: fc.array(fc.record({ type: fc.constantFrom('function', 'web_search', 'file_search'), name: fc.string({ maxLength: 8 }), parameters: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }), { maxLength: 2 }),
      tool_choice: fc.oneof(fc.constantFrom('auto', 'none', 'required'), fc.record({ type: fc.string({ maxLength: 8 }), name: fc.jsonValue({ maxDepth: 1 }) }, { requiredKeys: [] })),
      text: fc.record({ format: fc.record({ type: fc.constantFrom('text', 'json_object', 'json_schema', 'xml'), name: fc.string({ maxLength: 6 }), schema: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }), verbosity: fc.constantFrom('low', null) }, { requiredKeys: [] }),
      previous_response_id: fc.string({ maxLength: 10 }),
      store: fc.jsonValue({ maxDepth: 1 }),
    },
    { requiredKeys: ['model', 'input'] },
  )
  .map((value) => Buffer.from(JSON.stringify(value)));

const bodies = fc.oneof(
  { weight: 5, arbitrary: chatLike },
  { weight: 2, arbitrary: messagesLike },
  { weight: 2, arbitrary: fc.json({ maxDepth: 4 }).map((text) => Buffer.from(text)) },
  { weight: 2, arbitrary: chatLike.map((bytes) => bytes.subarray(0, Math.max(0, bytes.length - 3))) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 100_000 }).map((depth) => Buffer.from(`${'['.repeat(depth)}${']'.repeat(depth)}`)) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 50_000 }).map((depth) => Buffer.from(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`)) },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 2048 }).map((bytes) => Buffer.from(bytes)) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }).map((text) => Buffer.from(`{"model":"broken","messages":[{"role":"user","content":"${text}"}]}`)) },
  { weight: 1, arbitrary: fc.constantFrom(Buffer.from([0xc0, 0xae, 0xff, 0xfe]), Buffer.from('\ufeff{"model":"broken"}'), Buffer.from('{"model":"broken","model":"nope"}')) },
  { weight: 1, arbitrary: fc.constant(Buffer.alloc(0)) },
  { weight: 1, arbitrary: fc.constantFrom(64 * 1024, 64 * 1024, 64 * 1024, 1024 * 1024).map((size) => Buffer.alloc(size, 0x78)) },
);

/**
 * A body for a request to `path`. Anthropic's paths get a Messages request half the time: they
 * are a few of many targets, and a body drawn from the common mix rarely passes their checks,
 * so without this hardly a request there would get past them to the model.
 */
function bodiesFor(path: string): fc.Arbitrary<Buffer> {
  if (path === '/v1/responses') return fc.oneof(responsesLike, bodies);
  return isAnthropicPath(path) ? fc.oneof(messagesLike, bodies) : bodies;
}

function requests(port: number, adminToken: string): fc.Arbitrary<FuzzRequest> {
  const http = fc
    .record({
      line: methodsAndTargets(port),
      headers: headerSets(port, adminToken),
      framing: fc.constantFrom<Framing>('exact', 'exact', 'exact', 'exact', 'chunked', 'longer', 'shorter', 'truncated-chunked', 'none'),
    })
    .chain(({ line, ...rest }) => bodiesFor(pathOf(line.target)).map((body): FuzzRequest => described({ ...line, ...rest, body, garbage: null })));
  const garbage = fc
    .oneof(
      fc.uint8Array({ minLength: 1, maxLength: 512 }).map((bytes) => Buffer.from(bytes)),
      fc.constantFrom(
        'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n',
        'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab',
        'GET /\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
        'GET / HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n',
        'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n',
        'GET / HTTP/1.1\nHost: 127.0.0.1\n\n',
        '\r\n\r\n\r\n',
        'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
      ).map((text) => Buffer.from(text, 'latin1')),
    )
    .map((bytes): FuzzRequest => described({ method: '', target: '', headers: [], body: Buffer.alloc(0), framing: 'none', garbage: bytes }));
  return fc.oneof({ weight: 19, arbitrary: http }, { weight: 1, arbitrary: garbage });
}

/** A request in a line: a megabyte body as its length and first bytes, not a million numbers. */
function summary(request: FuzzRequest): string {
  const bytes = (data: Buffer): string => `${data.length} bytes ${JSON.stringify(data.subarray(0, 80).toString('latin1'))}${data.length > 80 ? '…' : ''}`;
  if (request.garbage !== null) return `garbage: ${bytes(request.garbage)}`;
  const headers = request.headers.map(([name, value]) => `${name}: ${value.length > 60 ? `${value.slice(0, 60)}…` : value}`);
  return `${request.method} ${request.target} framing=${request.framing} headers=${JSON.stringify(headers)} body=${bytes(request.body)}`;
}

/** The request, printed by fast-check as its summary. */
function described(request: FuzzRequest): FuzzRequest {
  return Object.assign(request, { [fc.toStringMethod]: () => summary(request) });
}

/** The request's bytes, and whether it is complete as sent (an incomplete one may get no answer). */
function encode(request: FuzzRequest): { bytes: Buffer; complete: boolean } {
  if (request.garbage !== null) return { bytes: request.garbage, complete: false };
  const { body, framing } = request;
  const head = [`${request.method} ${request.target} HTTP/1.1`, ...request.headers.map(([name, value]) => `${name}: ${value}`), 'Connection: close'];
  let payload: Buffer;
  switch (framing) {
    case 'exact':
      head.push(`Content-Length: ${body.length}`);
      payload = body;
      break;
    case 'longer':
      head.push(`Content-Length: ${body.length + 1 + (body.length % 97)}`);
      payload = body;
      break;
    case 'shorter':
      head.push(`Content-Length: ${Math.floor(body.length / 2)}`);
      payload = body;
      break;
    case 'chunked':
    case 'truncated-chunked': {
      head.push('Transfer-Encoding: chunked');
      const chunk = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n')]);
      payload = framing === 'chunked' ? Buffer.concat([body.length > 0 ? chunk : Buffer.alloc(0), Buffer.from('0\r\n\r\n')]) : chunk.subarray(0, Math.floor(chunk.length / 2));
      break;
    }
    case 'none':
      payload = Buffer.alloc(0);
      break;
  }
  const bytes = Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), payload]);
  // A body sent without a length to frame it is read as the next request, and answered; the
  // lying and truncated framings never finish arriving.
  return { bytes, complete: framing !== 'longer' && framing !== 'truncated-chunked' };
}

function pathOf(target: string): string {
  const query = target.indexOf('?');
  return query === -1 ? target : target.slice(0, query);
}

function header(request: FuzzRequest, name: string): string | undefined {
  return request.headers.find(([key]) => key.toLowerCase() === name)?.[1];
}

/** The paths the router answers in Anthropic's error shape, as it decides them (errorShapeFor in core/router/router.ts). */
function isAnthropicPath(path: string): boolean {
  return path === '/v1/messages' || path.startsWith('/v1/messages/');
}

/** Ollama's error body: `{ error: "…" }`, the message alone. */
function isOllamaError(body: unknown): boolean {
  return typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string';
}

/** Anthropic's error body: `{ type: 'error', error: { type, message } }`, with no OpenAI `code` beside them. */
function isAnthropicError(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const { type, error } = body as { type?: unknown; error?: unknown };
  if (type !== 'error' || typeof error !== 'object' || error === null) return false;
  const inner = error as Record<string, unknown>;
  return typeof inner['type'] === 'string' && typeof inner['message'] === 'string' && !('code' in inner);
}

/**
 * A refusal written before any path was read, so in OpenAI's shape whatever the target: bytes
 * Node's parser refused (a header block over its limit, a method it does not know) and CONNECT,
 * which Node never hands to the router (core/router/http/protocol-errors.ts).
 */
function answeredBeforeRouting(request: FuzzRequest, error: { code?: unknown }): boolean {
  return request.method === 'CONNECT' || error.code === 'malformed_request' || error.code === 'headers_too_large' || error.code === 'request_timeout';
}

/** Every property the suite holds, for one request and its answer; returns what was wrong, or null. */
function violation(request: FuzzRequest, answer: RawAnswer, complete: boolean, adminToken: string): string | null {
  if (answer.kind === 'closed') return complete ? 'the connection closed without an answer to a complete request' : null;
  const { status } = answer;
  if (!((status >= 200 && status < 300) || (status >= 400 && status < 600))) return `status ${status} is neither served (2xx) nor refused (4xx/5xx)`;
  const text = answer.body.toString('latin1');
  if (text.includes(adminToken)) return 'the answer carries the admin token';
  if (text.includes(CLIENT_KEY)) return 'the answer carries a client key';
  if (answer.headers['set-cookie'] !== undefined) return 'the answer sets a cookie';
  const path = pathOf(request.target);
  const isHead = request.method === 'HEAD';
  if (status >= 400) {
    // A HEAD answer has no body (Node drops it); its type still says it is the JSON error.
    if (isHead) return answer.headers['content-type']?.startsWith('application/json') ? null : `a ${status} to HEAD that is not a JSON error`;
    let body: unknown;
    try {
      body = JSON.parse(answer.body.toString('utf8'));
    } catch {
      return `a ${status} whose body is not JSON: ${JSON.stringify(text.slice(0, 120))}`;
    }
    const error = (body as { error?: { message?: unknown; code?: unknown } }).error;
    const isErrorShape = typeof error === 'object' && error !== null && typeof error.message === 'string' && (error.code === null || typeof error.code === 'string');
    if (isAnthropicPath(path)) {
      if (isAnthropicError(body)) return null;
      return isErrorShape && answeredBeforeRouting(request, error) ? null : `a ${status} to Anthropic's ${path} not in Anthropic's error shape: ${text.slice(0, 200)}`;
    }
    if (isOllamaPath(path)) {
      if (isOllamaError(body)) return null;
      return isErrorShape && answeredBeforeRouting(request, error) ? null : `a ${status} to Ollama's ${path} not in Ollama's error shape: ${text.slice(0, 200)}`;
    }
    const isCommandResult = (body as { ok?: unknown }).ok === false && typeof (body as { message?: unknown }).message === 'string';
    return isErrorShape || (isCommandResult && path.startsWith('/api/models/')) ? null : `a ${status} in no error shape: ${text.slice(0, 200)}`;
  }
  // Served: only with the credentials its surface requires.
  const authorization = header(request, 'authorization') ?? '';
  if (path === '/v1' || path.startsWith('/v1/') || isOllamaPath(path)) {
    const keyed = (/^bearer /i.test(authorization) && authorization.slice(7).trim() === CLIENT_KEY) || header(request, 'x-api-key')?.trim() === CLIENT_KEY;
    return keyed ? null : `${path} was served without a client key`;
  }
  if (path === '/api' || path.startsWith('/api/')) {
    return /^bearer /i.test(authorization) && authorization.slice(7).trim() === adminToken ? null : `${path} was served without the admin token`;
  }
  if (path === '/metrics' || request.method === 'OPTIONS') return null;
  if (isHead) return null;
  return staticFiles.some((file) => file.equals(answer.body)) ? null : `${request.method} ${request.target} served ${answer.body.length} bytes that are no file of ${STATIC_ROOT}`;
}

/** Requests sent at once per property run: the daemon serves them concurrently, as it would real clients. */
const BATCH = 8;

it(`answers ${RUNS} generated requests each in its surface's shape, serves nothing it should not, and stays up`, { timeout: 15 * 60_000 }, async () => {
  const seen = { served: 0, refused: 0, closed: 0, refusedUnderMessages: 0 };
  const exchange = async (request: FuzzRequest): Promise<void> => {
    const { bytes, complete } = encode(request);
    const answer = await rawExchange('127.0.0.1', daemon.port, bytes, { halfClose: !complete, timeoutMs: 20_000 }).catch((error: unknown) => {
      throw new Error(`${error instanceof Error ? error.message : String(error)}: ${summary(request)}`);
    });
    if (answer.kind === 'closed') seen.closed++;
    else if (answer.status < 400) seen.served++;
    else seen.refused++;
    if (answer.kind === 'answered' && answer.status >= 400 && isAnthropicPath(pathOf(request.target))) seen.refusedUnderMessages++;
    const problem = violation(request, answer, complete, daemon.token);
    if (problem !== null) throw new Error(`${problem} (status ${answer.status}): ${summary(request)}`);
  };
  await fc.assert(
    fc.asyncProperty(fc.array(requests(daemon.port, daemon.token), { minLength: BATCH, maxLength: BATCH }), async (batch) => {
      await Promise.all(batch.map(exchange));
      if (daemon.child.exitCode !== null || daemon.child.signalCode !== null) throw new Error(`the daemon ended:\n${daemon.stderr()}`);
    }),
    // No shrinking: each try is a batch of network exchanges, and the failing request is named
    // in the error already (its method, target, framing, headers and body, shortened).
    { numRuns: Math.ceil(RUNS / BATCH), endOnFailure: true },
  );
  // The run exercised every kind of outcome, not only refusals.
  expect(seen.served).toBeGreaterThan(RUNS / 20);
  expect(seen.refused).toBeGreaterThan(RUNS / 4);
  // And reached Anthropic's surface often enough that its error shape was held, not skipped.
  expect(seen.refusedUnderMessages).toBeGreaterThan(RUNS / 50);
  // Still up, still answering, and nothing it did went unhandled.
  expect(daemon.child.exitCode).toBeNull();
  expect((await daemon.state()).models.map((m) => m.id)).toEqual(['broken']);
  expect(daemon.stderr()).not.toMatch(/unhandled|uncaught/i);
});
