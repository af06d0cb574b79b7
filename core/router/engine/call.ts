// One small JSON exchange with a claimed engine whose answer the router needs itself rather than
// relays (a chat template's rendering, a token list), for answers the engine cannot give in one
// request. Unlike forwardToEngine nothing reaches the client here: the caller writes the answer.
import type http from 'node:http';
import type { AbortNotice } from '../../common/notice.js';
import type { EngineClaim, EngineLost } from '../model-gateway.js';
import { requestToEngine } from './upstream.js';

/**
 * How the call went. 'answer': the engine's status and body text. 'unreachable': the connection
 * failed before a complete answer (refused, reset, cut), so nothing is known and the request may
 * be sent again. 'lost': the claim was lost (the engine was found hung). 'client_gone': the
 * client left, and the call was abandoned.
 */
export type EngineCall =
  | { kind: 'answer'; status: number; text: string }
  | { kind: 'unreachable'; cause: string }
  | { kind: 'lost'; reason: string }
  | { kind: 'client_gone' };

/**
 * POSTs `body` as JSON to `path` on the claimed engine and collects its answer, reporting
 * progress to the claim as it arrives. Blocks until the answer is complete, the connection
 * fails, the claim is lost or the client leaves (each of the last two destroys the request).
 * Never rejects.
 */
export function callEngine(agent: http.Agent, claim: EngineClaim, path: string, body: unknown, clientGone: AbortNotice): Promise<EngineCall> {
  const bytes = Buffer.from(JSON.stringify(body));
  const upstream = requestToEngine(agent, claim, path, bytes.length);
  return new Promise((resolve) => {
    let settled = false;
    const settle = (result: EngineCall): void => {
      if (settled) return;
      settled = true;
      clientGone.removeEventListener('abort', onClientGone);
      claim.lost.removeEventListener('abort', onLost);
      if (result.kind === 'lost' || result.kind === 'client_gone') upstream.destroy();
      resolve(result);
    };
    const onClientGone = (): void => settle({ kind: 'client_gone' });
    const onLost = (): void => settle({ kind: 'lost', reason: (claim.lost.reason as EngineLost).reason });
    if (clientGone.aborted) return onClientGone();
    if (claim.lost.aborted) return onLost();
    clientGone.addEventListener('abort', onClientGone, { once: true });
    claim.lost.addEventListener('abort', onLost, { once: true });
    upstream.once('error', (error: NodeJS.ErrnoException) => settle({ kind: 'unreachable', cause: error.code ?? error.message }));
    upstream.once('response', (answer) => {
      claim.progressed();
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => {
        claim.progressed();
        chunks.push(chunk);
      });
      answer.on('error', () => {});
      answer.once('close', () => {
        if (!answer.complete) return settle({ kind: 'unreachable', cause: 'it closed the connection mid-answer' });
        settle({ kind: 'answer', status: answer.statusCode ?? 502, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    upstream.end(bytes);
  });
}
