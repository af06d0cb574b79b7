// Who may use /v1 when llmtray is configured with client keys (required on a network listener).
//
// Each key has a name, one per app, so that revoking one app (deleting its entry from
// listen.clientKeys; the config reloads by itself) leaves the others working. Clients present
// a key the way their SDK sends one: OpenAI's as `Authorization: Bearer <key>`, Anthropic's as
// `x-api-key: <key>`; either is accepted on every /v1 path, so one key serves both APIs.
//
// A network listener with no key at all refuses every request (fail closed): the config check
// refuses such a file, but `llmtray serve --host` can pair a LAN address with a config whose
// keys were all removed later, and that must not turn into an open endpoint.
import type { IncomingMessage } from 'node:http';
import { bearerOf, constantTimeEquals } from '../../common/credentials.js';
import type { RouterError } from './errors.js';

export interface ClientKey {
  /** The app's name, for the person; never sent to clients. */
  name: string;
  key: string;
}

/** The header Anthropic's SDKs send their key in. */
export const ANTHROPIC_KEY_HEADER = 'x-api-key';

/**
 * The name of the key a request presents, or the 401 that refuses it. `required`: refuse
 * even when no key is configured (a network listener). Pure; constant-time in each key.
 */
export function checkClientKey(req: IncomingMessage, keys: readonly ClientKey[], required: boolean): { ok: true; name: string | null } | { ok: false; error: RouterError } {
  if (keys.length === 0 && !required) return { ok: true, name: null };
  if (keys.length === 0) {
    return refuse('This llmtray endpoint listens on the network and has no client key configured, so it serves nobody: add one under listen.clientKeys in its config.yaml.');
  }
  const bearer = bearerOf(req);
  const anthropic = anthropicKeyOf(req);
  const presented = [bearer, anthropic].filter((key): key is string => key !== undefined);
  if (presented.length === 0) {
    return refuse(
      `This llmtray endpoint requires an API key: send it as \`Authorization: Bearer <key>\` (OpenAI clients) or \`${ANTHROPIC_KEY_HEADER}: <key>\` (Anthropic clients). The keys are listen.clientKeys in llmtray's config.yaml.`,
    );
  }
  // Every key is compared, whichever matches, so the time does not say which one did.
  let matched: string | null = null;
  for (const { name, key } of keys) for (const candidate of presented) if (constantTimeEquals(candidate, key) && matched === null) matched = name;
  if (matched !== null) return { ok: true, name: matched };
  const sentIn = [bearer === undefined ? null : '`Authorization: Bearer`', anthropic === undefined ? null : `\`${ANTHROPIC_KEY_HEADER}\``].filter((name) => name !== null);
  return refuse(
    `The API key sent in ${sentIn.join(' and in ')} is not one of this llmtray endpoint's client keys (listen.clientKeys in its config.yaml); a key removed from there no longer works.`,
  );
}

function anthropicKeyOf(req: IncomingMessage): string | undefined {
  const header = req.headers[ANTHROPIC_KEY_HEADER];
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function refuse(message: string): { ok: false; error: RouterError } {
  return {
    ok: false,
    error: { status: 401, source: 'router', type: 'authentication_error', code: 'invalid_api_key', param: null, message, headers: { 'www-authenticate': 'Bearer realm="llmtray"' } },
  };
}
