// Where the Hub is, who we are to it, and where its files go on disk: read from the environment
// as huggingface_hub reads it (test/fixtures/hub-api C1, C7, C8), so a mirror, a token and a
// cache set up for the Python tools are ours as well, and ours theirs.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hfHubCacheDir, type PlatformFacts } from '../catalog/paths.js';

export const DEFAULT_HUB_ENDPOINT = 'https://huggingface.co';

export interface HubAccess {
  /** `HF_ENDPOINT`, else https://huggingface.co; no trailing slash. */
  endpoint: string;
  /** `HF_TOKEN`, else the token file; undefined when neither. */
  token: string | undefined;
  /** Where the token came from, for a refusal that must say which one the Hub turned down. */
  tokenSource: string | undefined;
  /** The hub cache: `HF_HUB_CACHE`, else `HF_HOME/hub`, else the XDG cache's. */
  cacheDir: string;
}

/** Reads the access once; blocks on reading the token file, never rejects (no file is no token). */
export async function readHubAccess(facts: PlatformFacts): Promise<HubAccess> {
  const env = facts.env;
  const endpoint = (env.HF_ENDPOINT?.trim() || DEFAULT_HUB_ENDPOINT).replace(/\/+$/, '');
  const fromEnv = env.HF_TOKEN?.trim() || env.HUGGING_FACE_HUB_TOKEN?.trim();
  if (fromEnv) return { endpoint, token: fromEnv, tokenSource: env.HF_TOKEN?.trim() ? 'HF_TOKEN' : 'HUGGING_FACE_HUB_TOKEN', cacheDir: hfHubCacheDir(facts) };
  const tokenPath = env.HF_TOKEN_PATH ?? join(hfHome(facts), 'token');
  const fromFile = await readFile(tokenPath, 'utf8').then((text) => text.trim(), () => '');
  return { endpoint, token: fromFile || undefined, tokenSource: fromFile ? tokenPath : undefined, cacheDir: hfHubCacheDir(facts) };
}

function hfHome(facts: PlatformFacts): string {
  return facts.env.HF_HOME ?? join(facts.env.XDG_CACHE_HOME ?? join(facts.homeDir, '.cache'), 'huggingface');
}
