// Fake engines for the router's tests (test/integration/router*.test.ts): real HTTP servers on
// loopback that answer like llama-server, and one that dies like a killed llama-server's port.
//
// The last user message (or the prompt) picks a behaviour: `mode:gated` streams one chunk and
// waits for `release()`, `mode:steps` waits for `release()` after each of its first two chunks,
// `mode:die-mid-stream` destroys its socket after two chunks, `mode:hang` streams one chunk
// and never finishes, `mode:silent` accepts the request and never answers (a wedged decode),
// `mode:json-stall` sends a JSON answer's headers and first bytes and never the rest,
// `mode:json-cut` sends them and then destroys its socket,
// `mode:die-before-answer` destroys the socket without answering, `mode:engine-400` answers
// like llama-server refusing a prompt over its context (in OpenAI's shape, on every path, as
// llama-server does on its /v1/messages too), `mode:think` answers a chat as a thinking model
// does on llama-server (its reasoning parsed out, with --reasoning-format deepseek): the
// reasoning as `message.reasoning_content`, streamed as `delta.reasoning_content` chunks before
// the text. A chat request with `tools` (and a tool_choice other than "none") is answered with a
// call of one of them.
//
// Besides OpenAI's endpoints it serves what a recent llama-server does for Anthropic's Messages
// API — `/v1/messages` (JSON and the event stream) and `/v1/messages/count_tokens` — and the
// two endpoints the router counts tokens with on other engines, `/apply-template` (messages
// rendered as `<role>text` turns) and `/tokenize` (one token per character, plus one for the
// beginning of the sequence with add_special). Whether the router should send Messages requests
// as they are is the claim's business (EngineClaim.anthropicMessages), not this engine's.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';

/** llama-server names the model by its file, not by what the client asked for. */
export const ENGINE_MODEL_NAME = 'models/engine-own-name.gguf';

/** The beginning-of-sequence token `/tokenize` prepends with add_special. */
export const FAKE_BOS_TOKEN = 1;

/** What a `mode:think` chat answer reasons, in the pieces its stream sends. */
export const FAKE_REASONING = ['The user ', 'wants an echo.'];

export interface RecordedRequest {
  path: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
}

export class FakeEngine {
  readonly requests: RecordedRequest[] = [];
  /** Requests whose connection closed before the engine finished answering. */
  closedEarly = 0;
  private gate: (() => void) | null = null;
  private readonly server = http.createServer((req, res) => this.answer(req, res));

  constructor(readonly apiKey: string) {}

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  release(): void {
    this.gate?.();
    this.gate = null;
  }

  /** The requests received since `from` (an index into `requests`). */
  since(from: number): RecordedRequest[] {
    return this.requests.slice(from);
  }

  private async answer(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    this.requests.push({ path: req.url ?? '', authorization: req.headers.authorization, body });
    res.on('close', () => {
      if (!res.writableFinished) this.closedEarly++;
    });
    // llama-server's default: every origin allowed. The router must not pass this on.
    res.setHeader('access-control-allow-origin', '*');
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Invalid API Key', type: 'authentication_error', code: 401 } }));
      return;
    }
    const text = textOf(body);
    const mode = /mode:([\w-]+)/.exec(text)?.[1] ?? 'normal';
    if (mode === 'die-before-answer') return void req.socket.destroy();
    if (mode === 'silent') return;
    if (mode === 'json-stall') {
      // A plain JSON answer whose headers and first bytes went out before the engine wedged.
      const full = JSON.stringify({ id: 'cmpl-1', object: 'chat.completion', created: 1, model: ENGINE_MODEL_NAME, choices: [] });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(full) });
      return void res.write(full.slice(0, 20));
    }
    if (mode === 'json-cut') {
      // A plain JSON answer cut off after its headers and first bytes: the engine died while writing it.
      const full = JSON.stringify({ id: 'cmpl-1', object: 'chat.completion', created: 1, model: ENGINE_MODEL_NAME, choices: [] });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(full) });
      res.write(full.slice(0, 20), () => req.socket.destroy());
      return;
    }
    if (mode === 'engine-400') {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'the request exceeds the available context size', type: 'exceed_context_size_error', code: 400 } }));
      return;
    }
    switch (req.url) {
      case '/v1/embeddings':
        return json(res, { object: 'list', model: ENGINE_MODEL_NAME, data: [{ object: 'embedding', index: 0, embedding: [0.25, 0.5] }] });
      case '/v1/messages':
        return this.answerMessages(body, text, mode, req, res);
      case '/v1/messages/count_tokens':
        return json(res, { input_tokens: fakeTokens(renderTemplate(anthropicTurns(body)), true).length });
      case '/apply-template':
        return json(res, { prompt: renderTemplate(body['messages'] as { role: string; content: unknown }[]) });
      case '/tokenize':
        return json(res, { tokens: fakeTokens(String(body['content']), body['add_special'] === true) });
    }
    const reply = `echo: ${text}`;
    const isChat = req.url === '/v1/chat/completions';
    const thinking = isChat && mode === 'think';
    if (isChat && Array.isArray(body['tools']) && body['tools'].length > 0 && body['tool_choice'] !== 'none') return this.answerToolCall(body, text, res);
    if (body['stream'] !== true) {
      return json(res, {
        id: 'cmpl-1',
        object: isChat ? 'chat.completion' : 'text_completion',
        created: 1,
        model: ENGINE_MODEL_NAME,
        choices: [
          isChat
            ? { index: 0, message: { role: 'assistant', content: reply, ...(thinking ? { reasoning_content: FAKE_REASONING.join('') } : {}) }, finish_reason: 'stop' }
            : { index: 0, text: reply, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: Record<string, unknown>, finish: string | null): string =>
      `data: ${JSON.stringify({ id: 'chunk', object: 'chat.completion.chunk', created: 1, model: ENGINE_MODEL_NAME, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const event = (content: string, finish: string | null): string => chunk({ content }, finish);
    if (thinking) for (const piece of FAKE_REASONING) res.write(chunk({ reasoning_content: piece }, null));
    res.write(event('first ', null));
    if (mode === 'hang') return;
    if (mode === 'gated' || mode === 'steps') await new Promise<void>((resolve) => (this.gate = resolve));
    if (mode === 'die-mid-stream') {
      // Flushed first: destroying a socket drops what is still queued, and the point is an
      // engine that dies after the client has seen part of the answer.
      return void res.write(event('second', null), () => req.socket.destroy());
    }
    res.write(event('second', null));
    if (mode === 'steps') await new Promise<void>((resolve) => (this.gate = resolve));
    res.write(event('', 'stop'));
    const options = body['stream_options'] as { include_usage?: boolean } | undefined;
    if (options?.include_usage === true) {
      // OpenAI's usage chunk: no choices, the whole answer's counts.
      res.write(`data: ${JSON.stringify({ id: 'chunk', object: 'chat.completion.chunk', created: 1, model: ENGINE_MODEL_NAME, choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })}\n\n`);
    }
    res.end('data: [DONE]\n\n');
  }

  /**
   * A chat answer that calls a tool, as llama-server with --jinja does: the named tool of
   * `tool_choice`, else the first, with `{"echo": <last message's text>}` as its arguments —
   * streamed as OpenAI does, the id and name in the first chunk and the arguments in two pieces.
   */
  private answerToolCall(body: Record<string, unknown>, text: string, res: http.ServerResponse): void {
    const choice = body['tool_choice'] as { function?: { name?: string } } | undefined;
    const first = (body['tools'] as { function: { name: string } }[])[0];
    const name = choice?.function?.name ?? first?.function.name ?? '';
    const args = JSON.stringify({ echo: text });
    const id = 'call_fake_1';
    if (body['stream'] !== true) {
      return json(res, {
        id: 'cmpl-1',
        object: 'chat.completion',
        created: 1,
        model: ENGINE_MODEL_NAME,
        choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name, arguments: args } }] }, finish_reason: 'tool_calls' }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: Record<string, unknown>, finish: string | null): string =>
      `data: ${JSON.stringify({ id: 'chunk', object: 'chat.completion.chunk', created: 1, model: ENGINE_MODEL_NAME, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const half = Math.floor(args.length / 2);
    res.write(chunk({ role: 'assistant', content: 'Calling. ' }, null));
    res.write(chunk({ tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: args.slice(0, half) } }] }, null));
    res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(half) } }] }, null));
    res.write(chunk({}, 'tool_calls'));
    res.write(`data: ${JSON.stringify({ id: 'chunk', object: 'chat.completion.chunk', created: 1, model: ENGINE_MODEL_NAME, choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })}\n\n`);
    res.end('data: [DONE]\n\n');
  }

  /** `/v1/messages` as llama-server serves it: Anthropic's message, or its event stream (`event:` lines). */
  private async answerMessages(body: Record<string, unknown>, text: string, mode: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const reply = `native: ${text}`;
    const usage = { input_tokens: 3, output_tokens: 2 };
    if (body['stream'] !== true) {
      return json(res, { id: 'msg_1', type: 'message', role: 'assistant', content: [{ type: 'text', text: reply }], model: ENGINE_MODEL_NAME, stop_reason: 'end_turn', stop_sequence: null, usage });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const event = (data: Record<string, unknown>): string => `event: ${String(data['type'])}\ndata: ${JSON.stringify(data)}\n\n`;
    const delta = (piece: string): string => event({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } });
    res.write(
      event({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: ENGINE_MODEL_NAME, stop_reason: null, stop_sequence: null, usage: { input_tokens: 3, output_tokens: 0 } } }) +
        event({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
        delta('native '),
    );
    if (mode === 'die-mid-stream') return void res.write(delta('second'), () => req.socket.destroy());
    res.write(delta('second'));
    res.end(
      event({ type: 'content_block_stop', index: 0 }) +
        event({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } }) +
        event({ type: 'message_stop' }),
    );
  }
}

/** The text of the last message (its text parts or blocks joined), or the prompt or input. */
function textOf(body: Record<string, unknown>): string {
  if (Array.isArray(body['messages'])) {
    const last = body['messages'].at(-1) as { content?: unknown } | undefined;
    return contentText(last?.content);
  }
  return String(body['prompt'] ?? body['input'] ?? '');
}

function contentText(content: unknown): string {
  if (Array.isArray(content)) return content.map((part: { text?: unknown }) => String(part.text ?? '')).join('');
  return String(content ?? '');
}

/** An Anthropic prompt's turns, its system prompt first. */
function anthropicTurns(body: Record<string, unknown>): { role: string; content: unknown }[] {
  const system = body['system'];
  const turns = body['messages'] as { role: string; content: unknown }[];
  if (system === undefined) return turns;
  return [{ role: 'system', content: typeof system === 'string' ? system : contentText(system) }, ...turns];
}

/** The fake chat template: `<role>text` per turn, then the assistant's turn opened. */
export function renderTemplate(messages: readonly { role: string; content: unknown }[]): string {
  return messages.map((m) => `<${m.role}>${contentText(m.content)}`).join('') + '<assistant>';
}

/** The fake tokenizer: one token per character (its code point), the beginning of sequence first with add_special. */
export function fakeTokens(text: string, addSpecial: boolean): number[] {
  const tokens = [...text].map((c) => c.codePointAt(0) ?? 0);
  return addSpecial ? [FAKE_BOS_TOKEN, ...tokens] : tokens;
}

function json(res: http.ServerResponse, value: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/**
 * An engine in its last moments: it accepts each connection and resets it before answering,
 * as a killed llama-server's port does in the instant before its exit is seen.
 */
export async function startDyingEngine(): Promise<{ url: string; connections: () => number; stop: () => Promise<void> }> {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.resetAndDestroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
