// The Hub as the dashboard's Add model browses it, before anything is downloaded: a search for
// GGUF models, and a repo's quants each marked by how it would run here (quant-fit.ts), from one
// header read with Range requests (remote-gguf.ts). The pull's choice with no quant named uses
// the same estimate, so what the list says and what a pull takes agree.
//
// The search is @huggingface/hub's `listModels` (E1), with the `gguf` tag as its filter.
import { listModels } from '@huggingface/hub';
import { DEFAULT_CONTEXT_CAP } from '../catalog/catalog.js';
import { estimateFootprint } from '../catalog/footprint.js';
import { hubAlias, parseHubModelName } from '../contracts/hub/names.js';
import { PullRefused, type HubModelHit, type QuantOffer, type RepoOffer } from '../contracts/hub/pulls.js';
import type { FootprintEstimate } from '../policy/levels.js';
import { chooseFiles, modelChoices } from './choose-files.js';
import type { HubAccess } from './hub-access.js';
import { fileMetadata, repoFiles, repoId, type RepoFile } from './hub-api.js';
import { estimatesOf, fitOf, fitWords, type MachineRoom } from './quant-fit.js';
import { remoteGgufFacts } from './remote-gguf.js';

const SEARCH_LIMIT = 30;

/** GGUF models whose name holds `query`, as the Hub's search finds them. Rejects with PullRefused. */
export async function searchHub(access: HubAccess, query: string): Promise<HubModelHit[]> {
  const hits: HubModelHit[] = [];
  try {
    for await (const model of listModels({ search: { query, tags: ['gguf'] }, sort: 'downloads', limit: SEARCH_LIMIT, hubUrl: access.endpoint, ...(access.token ? { accessToken: access.token } : {}) })) {
      hits.push({ repo: model.name, downloads: model.downloads ?? 0, likes: model.likes ?? 0, gated: model.gated !== false && model.gated !== undefined });
    }
  } catch (error) {
    throw new PullRefused(502, 'hub_error', `The Hub at ${access.endpoint} could not search for '${query}': ${(error as Error).message}`);
  }
  return hits;
}

/** The repo's quants, largest first, each with how it would run on `room` (null: not known yet). Rejects with PullRefused. */
export async function repoOffer(access: HubAccess, name: string, room: MachineRoom | null): Promise<RepoOffer> {
  const parsed = parseHubModelName(name);
  if (!parsed.ok) throw new PullRefused(400, 'invalid_name', parsed.message);
  const repo = await repoId(access, parsed.name.repo);
  const files = await repoFiles(access, repo);
  const choices = modelChoices(files);
  if (choices.length === 0) chooseFiles(repo, files, { kind: 'default' }); // refuses: no GGUF
  const projector = chooseFiles(repo, files, { kind: 'file', path: choices[0]!.path }).projector;
  const base = room === null ? null : await repoEstimate(access, repo, files);
  const estimates = base === null ? null : estimatesOf(choices, base.estimate, base.index);
  const quants = choices.map((choice, i): QuantOffer => {
    const fit = estimates === null ? null : fitOf(estimates[i]!, room!);
    return {
      ...(choice.quant === undefined ? {} : { quant: choice.quant }),
      path: choice.path,
      sizeBytes: choice.sizeBytes,
      parts: choice.parts,
      fit: fit?.kind ?? 'unknown',
      fitWords: fit === null ? 'not known: llmtray has not measured this machine yet' : fitWords(fit),
      pullAs: choice.quant === undefined ? `hf.co/${repo}/${choice.path}` : hubAlias(repo, choice.quant),
    };
  });
  return { repo, quants: quants.sort((a, b) => b.sizeBytes - a.sizeBytes), ...(projector ? { projector: { path: projector.path, sizeBytes: projector.sizeBytes } } : {}) };
}

/**
 * One estimate for all of a repo's quants, from the smallest one's header (they are one model:
 * quant-fit.ts scales the weights by size), and which of modelChoices(files) it is. Rejects with
 * PullRefused when the header cannot be read or estimated.
 */
export async function repoEstimate(access: HubAccess, repo: string, files: readonly RepoFile[]): Promise<{ estimate: FootprintEstimate; index: number }> {
  const choices = modelChoices(files);
  const index = choices.reduce((best, c, i) => (c.sizeBytes < choices[best]!.sizeBytes ? i : best), 0);
  const base = choices[index]!;
  const facts = await remoteGgufFacts(await fileMetadata(access, repo, base.path), base.path);
  const unreadable = (why: string) => new PullRefused(502, 'hub_answer', `Cannot tell how ${repo} would run here: ${why}. Name a quant to pull: hf.co/${repo}:${choices.find((c) => c.quant !== undefined)?.quant ?? 'QUANT'}.`);
  if (!facts.ok) throw unreadable(facts.error);
  const estimate = estimateFootprint({ path: base.path, facts: facts.facts, contextTokens: Math.min(facts.facts.contextLength ?? DEFAULT_CONTEXT_CAP, DEFAULT_CONTEXT_CAP), gpuLayers: 'all' });
  if (!estimate.ok) throw unreadable(estimate.error);
  return { estimate: estimate.estimate, index };
}
