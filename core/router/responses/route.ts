// How a request in OpenAI's Responses API reaches the engine that serves its model: checked and
// translated before the load (request.ts), then, once the engine is known, sent to its
// /v1/chat/completions and its answer re-told as a Response (translate.ts, and
// stream.ts for a stream). The router runs the same activation, claims, resend and
// hang handling as for every generation route (router.ts). No engine is sent the request as it
// is: none claims /v1/responses today (translate.ts says why). A fallback's id is the
// model the answer names, as on the other routes.
import { inEngineWords } from '../engine/request.js';
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import type { ServerResponse } from 'node:http';
import { engineErrorOf, grammarFieldOf } from '../engine/errors.js';
import { errorBody, type RouterError } from '../http/errors.js';
import { sendError } from '../http/send-error.js';
import { refusedField, refusedTools } from '../openai/request-fields.js';
import { parseResponsesRequest } from './request.js';
import { ChatStreamToResponses, responsesErrorEvent } from './stream.js';
import { refusedReasoning, toResponse, type ResponseFrame } from './translate.js';
import { forwardToEngine, type AnswerShape, type ModelRequest } from '../engine/upstream.js';

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** `POST /v1/responses`, checked; the refusal when the body is not a valid request. Pure until sent. */
export function responsesRequest(agent: http.Agent, res: ServerResponse, raw: Buffer): ModelRequest | RouterError {
  const parsed = parseResponsesRequest(raw);
  if (!parsed.ok) return parsed.error;
  const { body, model, chat } = parsed;
  return {
    model,
    // Nothing went out before a refusal while the model loads but comments: it is the stream's first event.
    streamError: body.stream === true ? (error) => responsesErrorEvent(error, 0) : null,
    generates: true,
    takesSlot: true,
    send(claim, fallingBack, clientGone) {
      const { servedBy } = claim;
      const refusal = refusedField('responses', body, claim.engine, servedBy) ?? refusedTools(body, claim.toolCalls, servedBy) ?? refusedReasoning(chat, claim.engine, servedBy);
      if (refusal !== null) {
        sendError(res, refusal);
        return Promise.resolve({ kind: 'answered' });
      }
      const sent = inEngineWords({ model: fallingBack ? servedBy : model, ...chat }, claim.engine, servedBy);
      if (!sent.ok) {
        sendError(res, sent.error);
        return Promise.resolve({ kind: 'answered' });
      }
      const frame: ResponseFrame = { id: `resp_${randomBytes(16).toString('hex')}`, createdAt: nowSeconds(), model: fallingBack ? servedBy : null, request: body };
      return forwardToEngine(agent, res, clientGone, claim, {
        path: '/v1/chat/completions',
        body: Buffer.from(JSON.stringify(sent.value)),
        shape: responsesAnswer(frame, servedBy, responsesGrammarField(chat)),
      });
    },
  };
}

/** The Responses field a grammar of the translated chat request comes from, as the client named it. */
function responsesGrammarField(chat: Readonly<Record<string, unknown>>): string | null {
  const field = grammarFieldOf(chat);
  return field === 'response_format' ? 'text.format' : field;
}

/** A chat completion answer re-told as a Response; errors in OpenAI's shape, which the Responses API shares. */
function responsesAnswer(frame: ResponseFrame, servedBy: string, grammarParam: string | null): AnswerShape {
  // The stream being translated, so that an error event ending it early is numbered after its last event.
  let translating: ChatStreamToResponses | null = null;
  return {
    json: (text) => {
      const response = toResponse(text, frame, nowSeconds());
      return response === null ? null : JSON.stringify(response);
    },
    stream: () => (translating = new ChatStreamToResponses(frame, servedBy, nowSeconds)),
    error: (text, status) => JSON.stringify(errorBody(engineErrorOf(text, status, servedBy, 'input', grammarParam))),
    errors: errorBody,
    streamError: (error) => translating?.errorEvent(error) ?? responsesErrorEvent(error, 0),
  };
}
