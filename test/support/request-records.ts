// A request record as the router writes one, with every field a test does not care about at a
// plain value: a streamed chat completion for demo-chat, answered 200 at once.
import type { RequestRecord } from '../../core/contracts/requests/request-record.js';

let next = 0;

export function requestRecord(fields: Partial<RequestRecord> = {}): RequestRecord {
  next += 1;
  return {
    id: `r${next}`,
    at: 1_700_000_000_000 + next,
    route: '/v1/chat/completions',
    model: 'demo-chat',
    servedBy: 'demo-chat',
    client: 'local',
    status: 200,
    stream: true,
    waited: null,
    waitMs: 0,
    firstTokenMs: 100,
    promptTokens: 20,
    cachedTokens: 0,
    completionTokens: 10,
    tokensPerSecond: 50,
    durationMs: 300,
    error: null,
    ...fields,
  };
}
