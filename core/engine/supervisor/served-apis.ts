// Which APIs a ready model server serves besides OpenAI's, asked of the server itself.
//
// Why ask the running server rather than read its --help or version (as capabilities.ts does
// for flags): Anthropic's Messages API arrived in llama-server with no flag to show in --help
// (llama.cpp PR #17570, November 2025), and the version cannot date a build — builds from
// node-llama-cpp's sources call themselves "build 1", forks carry their own numbers, and forks
// port such features on their own schedule. The server's own answer is the one thing that
// always matches the build. The probe is `count_tokens`, because it came in the same change as
// `/v1/messages` and costs a tokenization of one short message, no generation: an answer with a
// token count means both are served; a 404 (older builds, the embedded engine) or anything else
// means they are not, and the router translates to chat completions, which every engine serves.
import { enginePost } from './engine-get.js';

export interface ServedApis {
  /** `POST /v1/messages` and `POST /v1/messages/count_tokens`, Anthropic's Messages API. */
  anthropicMessages: boolean;
}

/** The probe's own bound: a ready server answers in milliseconds; one that does not is not trusted with the API. */
const PROBE_TIMEOUT_MS = 2_000;

const PROBE_BODY = { model: 'llmtray-probe', messages: [{ role: 'user', content: 'Hello' }] };

/** Asks the ready server at `port` what it serves. Blocks for one loopback request, at most 2 s; never rejects. */
export async function probeServedApis(port: number, apiKey: string): Promise<ServedApis> {
  const answer = await enginePost(port, apiKey, '/v1/messages/count_tokens', PROBE_BODY, PROBE_TIMEOUT_MS);
  return { anthropicMessages: answer?.status === 200 && countsTokens(answer.body) };
}

function countsTokens(body: string): boolean {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null && typeof (parsed as { input_tokens?: unknown }).input_tokens === 'number';
  } catch {
    return false;
  }
}
