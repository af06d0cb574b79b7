// `POST /v1/messages/count_tokens` for an engine that does not serve it: the embedded engine and
// llama-server builds older than their own Messages API.
//
// The count must be the one the model will see, template and all, or an agent that compacts its
// conversation by it would overflow the context. So the engine renders the chat messages with
// the model's own template (`POST /apply-template`) and tokenizes that text as a prompt
// (`POST /tokenize` with the beginning-of-sequence token and special tokens parsed): exactly
// what llama-server's own count_tokens does inside, in two loopback round trips and no
// generation. Counting the text without the template was the rejected alternative: it misses
// the template's markers, several tokens per turn. An engine without those endpoints is told so
// with a 501 that names what it lacks.
import type http from 'node:http';
import type { ServerResponse } from 'node:http';
import type { AnthropicTokenCount } from '../../contracts/protocols/anthropic.js';
import type { OpenAIChatMessage } from '../../contracts/protocols/openai.js';
import type { AbortNotice } from '../../common/notice.js';
import { anthropicEngineError, anthropicErrorBody } from './errors.js';
import { callEngine } from '../engine/call.js';
import { engineBadAnswer } from '../http/errors.js';
import { ERROR_SOURCE_HEADER, SERVED_BY_HEADER } from '../http/headers.js';
import { sendError } from '../http/send-error.js';
import type { EngineClaim } from '../model-gateway.js';
import { hungError, type ForwardOutcome } from '../engine/upstream.js';
import { isObject } from '../../common/is-object.js';

/**
 * Counts `messages` (already translated to OpenAI's chat shape) on the claimed engine and
 * answers the client with `{ input_tokens }`, or the engine's error in Anthropic's shape. Never
 * rejects. 'unreachable' when a connection failed before an answer was written (the router may
 * send the request again); 'answered' otherwise, including when the client left.
 */
export async function countTokensByTemplate(
  agent: http.Agent,
  res: ServerResponse,
  clientGone: AbortNotice,
  claim: EngineClaim,
  messages: OpenAIChatMessage[],
  toolFields: Record<string, unknown> = {},
): Promise<ForwardOutcome> {
  // The tools are part of what the model sees: the template writes their definitions into the prompt.
  const rendered = await step(agent, res, clientGone, claim, '/apply-template', { messages, ...toolFields }, (answer) =>
    isObject(answer) && typeof answer['prompt'] === 'string' ? answer['prompt'] : null,
  );
  if (rendered.kind !== 'value') return rendered;
  const tokenized = await step(agent, res, clientGone, claim, '/tokenize', { content: rendered.value, add_special: true, parse_special: true }, (answer) =>
    isObject(answer) && Array.isArray(answer['tokens']) ? answer['tokens'].length : null,
  );
  if (tokenized.kind !== 'value') return tokenized;
  const body = JSON.stringify({ input_tokens: tokenized.value } satisfies AnthropicTokenCount);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), [SERVED_BY_HEADER]: claim.servedBy });
  res.end(body);
  return { kind: 'answered' };
}

/** One call, answering the client itself for everything but a usable answer or a resendable failure. */
async function step<T>(
  agent: http.Agent,
  res: ServerResponse,
  clientGone: AbortNotice,
  claim: EngineClaim,
  path: string,
  body: unknown,
  read: (answer: unknown) => T | null,
): Promise<{ kind: 'value'; value: T } | ForwardOutcome> {
  const { servedBy } = claim;
  const call = await callEngine(agent, claim, path, body, clientGone);
  if (call.kind === 'unreachable') return call;
  if (call.kind === 'client_gone') return { kind: 'answered' };
  if (call.kind === 'lost') {
    sendError(res, hungError(servedBy, call.reason), anthropicErrorBody);
    return { kind: 'answered' };
  }
  if (call.status === 404) {
    sendError(
      res,
      {
        status: 501,
        source: 'engine',
        type: 'engine_error',
        code: 'count_tokens_unsupported',
        param: null,
        message: `The model server for '${servedBy}' cannot count tokens: it serves neither /v1/messages/count_tokens nor ${path}, which llmtray counts with. A recent llama-server build serves both.`,
      },
      anthropicErrorBody,
    );
    return { kind: 'answered' };
  }
  if (call.status >= 400) {
    const text = anthropicEngineError(call.text, call.status, servedBy);
    res.writeHead(call.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), [SERVED_BY_HEADER]: servedBy, [ERROR_SOURCE_HEADER]: 'engine' });
    res.end(text);
    return { kind: 'answered' };
  }
  const value = read(parse(call.text));
  if (value !== null) return { kind: 'value', value };
  sendError(res, engineBadAnswer(servedBy, `answered ${path}`, call.text), anthropicErrorBody);
  return { kind: 'answered' };
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
