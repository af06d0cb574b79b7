// How a request to OpenAI's own endpoints (`/v1/chat/completions`, `/v1/completions`,
// `/v1/embeddings`) reaches the engine that serves its model: checked against the field table,
// then the body sent as it came, re-serialised only to name a fallback or to say a field in the
// engine's words. The router (router.ts) runs the activation, claims, resend and hang handling
// around it, as for every API; only this last step is the endpoint's own, as anthropic/route.ts
// and responses/route.ts are theirs.
import type http from 'node:http';
import type { ServerResponse } from 'node:http';
import type { RouterError } from '../http/errors.js';
import { sendError } from '../http/send-error.js';
import { forEngine } from '../engine/request.js';
import { grammarFieldOf } from '../engine/errors.js';
import { forwardToEngine, openAIAnswer, openAIErrorEvent, type AnswerShape, type ModelRequest } from '../engine/upstream.js';
import { completingChatAnswers } from './chat-answer-shape.js';
import { refusedField, refusedTools } from './request-fields.js';
import { parseRequest, type OpenAIEndpoint } from './validate-request.js';

/** The field an engine's "prompt too long" is about, per endpoint (engine-errors.ts). */
const PROMPT_FIELD: Record<OpenAIEndpoint, string> = { 'chat.completions': 'messages', completions: 'prompt', embeddings: 'input' };

/** A chat completion answer with the nulls OpenAI's schema requires (chat-answer-shape.ts); the other endpoints' as they are. */
const inSchemaShape = (endpoint: OpenAIEndpoint, shape: AnswerShape): AnswerShape => (endpoint === 'chat.completions' ? completingChatAnswers(shape) : shape);

/** An OpenAI endpoint's request: the body as it came, re-serialised only to name a fallback. */
export function openAIRequest(agent: http.Agent, res: ServerResponse, endpoint: OpenAIEndpoint, path: string, raw: Buffer): ModelRequest | RouterError {
  const parsed = parseRequest(endpoint, raw);
  if (!parsed.ok) return parsed.error;
  // What no engine can honour is refused before anything loads; what only some cannot, once the engine is known.
  const refusal = refusedField(endpoint, parsed.body, null);
  if (refusal !== null) return refusal;
  return {
    model: parsed.model,
    streamError: parsed.body['stream'] === true ? openAIErrorEvent : null,
    generates: endpoint !== 'embeddings',
    takesSlot: true,
    send: (claim, fallingBack, clientGone) => {
      const late = refusedField(endpoint, parsed.body, claim.engine, claim.servedBy) ?? refusedTools(parsed.body, claim.toolCalls, claim.servedBy);
      if (late !== null) {
        sendError(res, late);
        return Promise.resolve({ kind: 'answered' });
      }
      const inEngineWords = forEngine(parsed.body, claim.engine, claim.servedBy);
      if (!inEngineWords.ok) {
        sendError(res, inEngineWords.error);
        return Promise.resolve({ kind: 'answered' });
      }
      const asEngineReadsIt = inEngineWords.value;
      // A conversation kept across its model's eviction goes back into the engine first.
      const restored = endpoint === 'chat.completions' && claim.beforeChat !== undefined ? claim.beforeChat(parsed.body) : Promise.resolve();
      return restored.then(() => forwardToEngine(agent, res, clientGone, claim, {
        path,
        // Re-serialised only to name the fallback (the engine must be asked for the model it
        // serves) or to say what the client asked in the engine's words (engine-request.ts).
        body: fallingBack || asEngineReadsIt !== null ? Buffer.from(JSON.stringify({ ...(asEngineReadsIt ?? parsed.body), ...(fallingBack ? { model: claim.servedBy } : {}) })) : raw,
        shape: inSchemaShape(endpoint, openAIAnswer(fallingBack ? claim.servedBy : null, claim.servedBy, PROMPT_FIELD[endpoint], grammarFieldOf(parsed.body))),
      }));
    },
  };
}
