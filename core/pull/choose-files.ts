// Which of a repo's files a name means, as Ollama and llama.cpp choose them
// (test/fixtures/hub-api G1–G4): the GGUF whose name holds the quant (case-insensitive), every
// part of a split one, and the vision projector beside it. Pure.
import { heldQuant, type HubModelName } from '../contracts/hub/names.js';
import { PullRefused } from '../contracts/hub/pulls.js';
import { chooseProjector, isProjectorFile } from '../catalog/discovery.js';
import type { RepoFile } from './hub-api.js';

export interface ChosenFiles {
  /** The model's files: one, or every part of a split model in order. */
  model: RepoFile[];
  /** The vision projector, when the repo has one. */
  projector?: RepoFile;
  /** The quant as the file's name writes it; undefined for a file whose name holds none. */
  quant: string | undefined;
}

const SPLIT = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i;

/** One model of the repo: a single GGUF or the parts of a split one. */
interface ModelGroup {
  /** The name without `.gguf` and without the part suffix. */
  stem: string;
  parts: RepoFile[];
  /** Parts a split model names but the repo lacks. */
  missing: number;
  quant: string | undefined;
}

/** The files `name` means among `files`, or a PullRefused that lists what there is. */
export function chooseFiles(repo: string, files: readonly RepoFile[], select: HubModelName['select']): ChosenFiles {
  const models = modelGroups(files);
  if (models.length === 0) throw new PullRefused(404, 'no_gguf', `${repo} has no GGUF model files, so llama.cpp cannot run it; look for a repo with GGUF in its name (most publishers put the GGUF quants of a model in one, e.g. OWNER/MODEL-GGUF).`);
  const group = pick(repo, models, select);
  if (group.missing > 0) throw new PullRefused(404, 'split_incomplete', `${repo}'s ${group.stem} is split in parts and ${group.missing} of them are not in the repo; it cannot be pulled whole.`);
  // Beside the model: discovery attaches the projector of the model's own folder (core/catalog/discovery.ts).
  const folder = dirOf(group.parts[0]!.path);
  const projectorName = chooseProjector(files.filter((f) => dirOf(f.path) === folder).map((f) => f.path.slice(folder === '' ? 0 : folder.length + 1)));
  const projector = projectorName === undefined ? undefined : files.find((f) => f.path === (folder === '' ? projectorName : `${folder}/${projectorName}`));
  return { model: group.parts, ...(projector ? { projector } : {}), quant: group.quant };
}

/** The repo's whole models (a split one once, by its first part) with their quants and sizes: what a pull with no quant chooses among. */
export function modelChoices(files: readonly RepoFile[]): { path: string; quant: string | undefined; sizeBytes: number; parts: number }[] {
  return modelGroups(files)
    .filter((group) => group.missing === 0)
    .map((group) => ({ path: group.parts[0]!.path, quant: group.quant, sizeBytes: group.parts.reduce((sum, part) => sum + part.sizeBytes, 0), parts: group.parts.length }));
}

function pick(repo: string, models: readonly ModelGroup[], select: HubModelName['select']): ModelGroup {
  switch (select.kind) {
    case 'file': {
      const wanted = select.path.toLowerCase();
      const found = models.find((m) => m.parts.some((p) => p.path === select.path)) ?? models.find((m) => m.parts.some((p) => p.path.toLowerCase() === wanted));
      if (found) return found;
      throw new PullRefused(404, 'file_not_found', `${repo} has no model file ${select.path}; its GGUF models are ${list(models.map((m) => m.parts[0]!.path))}.`);
    }
    case 'quant': {
      const wanted = select.quant.toLowerCase();
      const exact = models.filter((m) => m.quant?.toLowerCase() === wanted);
      // Ollama's rule is "the file whose name holds the quant": a name like `model.Q4_K_M-imat.gguf` has it inside, not at the end.
      const holding = exact.length > 0 ? exact : models.filter((m) => new RegExp(`(^|[-_.])${escape(wanted)}([-_.]|$)`, 'i').test(m.stem));
      if (holding.length > 0) return holding[0]!;
      throw new PullRefused(404, 'unknown_quant', `${repo} has no ${select.quant} quant; ${quantsSentence(repo, models)}`);
    }
    case 'default': {
      // G2: Q4_K_M when there is one, else the only model; with several and none of them Q4_K_M, the person chooses.
      const q4 = models.find((m) => m.quant?.toLowerCase() === 'q4_k_m');
      if (q4) return q4;
      if (models.length === 1) return models[0]!;
      throw new PullRefused(400, 'choose_quant', `${repo} holds ${models.length} models and no Q4_K_M; ${quantsSentence(repo, models)}`);
    }
  }
}

function quantsSentence(repo: string, models: readonly ModelGroup[]): string {
  const quants = [...new Set(models.map((m) => m.quant).filter((q): q is string => q !== undefined))];
  if (quants.length === 0) return `its models are ${list(models.map((m) => m.parts[0]!.path))}; pull one as hf.co/${repo}/FILE.gguf.`;
  const suggested = quants.find((q) => q.toLowerCase() === 'q4_k_m') ?? quants[0];
  return `the quants there are ${list(quants)}; pull one as hf.co/${repo}:${suggested}.`;
}

function modelGroups(files: readonly RepoFile[]): ModelGroup[] {
  const groups = new Map<string, { stem: string; total: number; parts: Map<number, RepoFile> }>();
  const singles: ModelGroup[] = [];
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    const name = file.path.split('/').pop()!;
    if (!/\.gguf$/i.test(name) || isProjectorFile(name)) continue;
    const split = SPLIT.exec(file.path);
    if (!split) {
      const stem = name.replace(/\.gguf$/i, '');
      singles.push({ stem, parts: [file], missing: 0, quant: heldQuant(stem) });
      continue;
    }
    const key = `${split[1]}\u0000${split[3]}`;
    const group = groups.get(key) ?? { stem: split[1]!.split('/').pop()!, total: Number(split[3]), parts: new Map<number, RepoFile>() };
    group.parts.set(Number(split[2]), file);
    groups.set(key, group);
  }
  const splits = [...groups.values()].map((g): ModelGroup => {
    const parts = [...g.parts.entries()].sort(([a], [b]) => a - b).map(([, f]) => f);
    return { stem: g.stem, parts, missing: g.total - parts.length, quant: heldQuant(g.stem) };
  });
  return [...singles, ...splits];
}

function dirOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash < 0 ? '' : path.slice(0, slash);
}

function list(items: readonly string[]): string {
  return items.length <= 12 ? items.join(', ') : `${items.slice(0, 12).join(', ')} and ${items.length - 12} more`;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
