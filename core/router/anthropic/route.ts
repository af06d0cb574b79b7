// How a request in Anthropic's Messages API reaches the engine that serves its model.
//
// The router runs the same activation, claims, resend and hang handling as for chat completions
// (router.ts); only the last step differs, and it is decided per claim, because the engine is
// known only then and a fallback may be another kind of engine than the model asked for:
// - an engine that serves /v1/messages itself (EngineClaim.anthropicMessages: recent
//   llama-server builds) gets the request as it is, and its answer is relayed as it is — its
//   errors, which it spells in OpenAI's shape, re-spelled in Anthropic's — unless that engine's
//   own conversion would misread the request's tool choice (misreadByEngineConversion);
// - any other engine gets the request translated to a chat completion (translate.ts),
//   its answer translated back (stream.ts for a stream), and a token count from its
//   chat template and tokenizer (count-tokens.ts).
// Either way a fallback's id is the model named in the answer and in x-llmtray-served-by.
import type http from 'node:http';
import type { ServerResponse } from 'node:http';
import { anthropicEngineError, anthropicErrorBody, anthropicErrorEvent } from './errors.js';
import { parseCountTokensRequest, parseMessagesRequest } from './request.js';
import { ChatStreamToMessages } from './stream.js';
import { toAnthropicMessage, toChatCompletionRequest, toChatMessages, toChatToolFields } from './translate.js';
import { countTokensByTemplate } from './count-tokens.js';
import { refusedField, refusedTools } from '../openai/request-fields.js';
import type { RouterError } from '../http/errors.js';
import { sendError } from '../http/send-error.js';
import { forwardToEngine, type AnswerShape, type ModelRequest } from '../engine/upstream.js';
import { rewriteModelField, SseModelRewriter } from '../engine/model-rewriter.js';
import { inEngineWords } from '../engine/request.js';
import { isObject } from '../../common/is-object.js';

/** `POST /v1/messages`, checked; the refusal when the body is not a valid request. Pure until sent. */
export function messagesRequest(agent: http.Agent, res: ServerResponse, raw: Buffer): ModelRequest | RouterError {
  const parsed = parseMessagesRequest(raw);
  if (!parsed.ok) return parsed.error;
  const { body, model } = parsed;
  return {
    model,
    streamError: body.stream === true ? (error) => anthropicErrorEvent(anthropicErrorBody(error)) : null,
    generates: true,
    takesSlot: true,
    send(claim, fallingBack, clientGone) {
      const { servedBy } = claim;
      const renamed = fallingBack ? servedBy : null;
      if (claim.anthropicMessages && !misreadByEngineConversion(body)) {
        return forwardToEngine(agent, res, clientGone, claim, {
          path: '/v1/messages',
          // Re-serialised only to name the fallback: the engine must be asked for the model it serves.
          body: fallingBack ? Buffer.from(JSON.stringify({ ...body, model: servedBy })) : raw,
          shape: nativeAnswer(renamed, servedBy),
        });
      }
      const refusal = refusedField('messages', body, null, servedBy) ?? refusedTools(body, claim.toolCalls, servedBy);
      const target = { servedBy, servesMessages: claim.anthropicMessages };
      const chat = refusal === null ? toChatCompletionRequest(body, renamed ?? model, target) : { ok: false as const, error: refusal };
      const sent = chat.ok ? inEngineWords({ ...chat.value }, claim.engine, servedBy) : chat;
      if (!sent.ok) {
        // On an engine that serves the API itself, the translation was chosen for the tool choice: said so, since the engine would have taken the rest.
        const error = claim.anthropicMessages ? { ...sent.error, message: `${sent.error.message}${MISREAD_NOTE}` } : sent.error;
        sendError(res, error, anthropicErrorBody);
        return Promise.resolve({ kind: 'answered' });
      }
      return forwardToEngine(agent, res, clientGone, claim, {
        path: '/v1/chat/completions',
        body: Buffer.from(JSON.stringify(sent.value)),
        shape: translatedAnswer(renamed, servedBy),
      });
    },
  };
}

/** Said after a refusal of a request the translation took for its tool choice, on an engine that serves the API itself. */
const MISREAD_NOTE =
  " The request went through llmtray's translation, not to the llama-server's own /v1/messages, because that server would misread its tool_choice (a named tool as any tool; none and disable_parallel_tool_use not at all): send it with tool_choice auto or any to have the server take the rest as it is.";

/**
 * A request whose tool choice a llama-server's own Messages conversion misreads
 * (server-chat.cpp, b1-80fb11a, `server_chat_convert_anthropic_to_oai`): `{type: "tool", name}`
 * becomes "required" of any tool, `{type: "none"}` is not carried (so "auto"), and
 * `disable_parallel_tool_use` is dropped. Such a request takes the translated path, whose chat
 * words that build reads as meant (engine/request.ts for the named tool). Pure.
 */
export function misreadByEngineConversion(body: Readonly<Record<string, unknown>>): boolean {
  const choice = body['tool_choice'];
  if (!isObject(choice)) return false;
  return choice['type'] === 'tool' || choice['type'] === 'none' || choice['disable_parallel_tool_use'] === true;
}

/** `POST /v1/messages/count_tokens`, checked; the refusal when the body is not a valid request. */
export function countTokensRequest(agent: http.Agent, res: ServerResponse, raw: Buffer): ModelRequest | RouterError {
  const parsed = parseCountTokensRequest(raw);
  if (!parsed.ok) return parsed.error;
  const { body, model } = parsed;
  return {
    model,
    streamError: null,
    generates: false,
    // Counted with the model's template and tokenizer, beside its slots.
    takesSlot: false,
    send(claim, _fallingBack, clientGone) {
      // The count names no model, so a fallback needs no renaming: only its tokenizer counts.
      if (claim.anthropicMessages) {
        return forwardToEngine(agent, res, clientGone, claim, { path: '/v1/messages/count_tokens', body: raw, shape: nativeAnswer(null, claim.servedBy) });
      }
      const target = { servedBy: claim.servedBy, servesMessages: false };
      const messages = toChatMessages(body, target);
      if (!messages.ok) {
        sendError(res, messages.error, anthropicErrorBody);
        return Promise.resolve({ kind: 'answered' });
      }
      const tools = toChatToolFields(body, target);
      if (!tools.ok) {
        sendError(res, tools.error, anthropicErrorBody);
        return Promise.resolve({ kind: 'answered' });
      }
      return countTokensByTemplate(agent, res, clientGone, claim, messages.value, tools.value);
    },
  };
}

/** An engine's own Messages API answer: as it is, a fallback's id as its model, errors in Anthropic's shape. */
function nativeAnswer(rewriteModelTo: string | null, servedBy: string): AnswerShape {
  return {
    json: rewriteModelTo === null ? null : (text) => rewriteModelField(text, rewriteModelTo) ?? text,
    stream: rewriteModelTo === null ? null : () => new SseModelRewriter(rewriteModelTo, rewriteMessageStartModel),
    error: (text, status) => anthropicEngineError(text, status, servedBy),
    errors: anthropicErrorBody,
    streamError: (error) => anthropicErrorEvent(anthropicErrorBody(error)),
  };
}

/** A chat completion answer re-told as a Messages API answer. */
function translatedAnswer(rewriteModelTo: string | null, servedBy: string): AnswerShape {
  return {
    json: (text) => {
      const message = toAnthropicMessage(text, rewriteModelTo);
      return message === null ? null : JSON.stringify(message);
    },
    stream: () => new ChatStreamToMessages({ model: rewriteModelTo, servedBy }),
    error: (text, status) => anthropicEngineError(text, status, servedBy),
    errors: anthropicErrorBody,
    streamError: (error) => anthropicErrorEvent(anthropicErrorBody(error)),
  };
}

/** The one event of a Messages stream that names the model: message_start's `message.model`. Null for every other event. */
export function rewriteMessageStartModel(json: string, model: string): string | null {
  try {
    const event: unknown = JSON.parse(json);
    if (!isObject(event) || event['type'] !== 'message_start' || !isObject(event['message'])) return null;
    return JSON.stringify({ ...event, message: { ...event['message'], model } });
  } catch {
    return null;
  }
}
