// Checks that span models: drafts and fallbacks name models that exist, chains end, a draft
// has no draft of its own, a draft speaks its primary's vocabulary, and a fallback can give the
// answers its model gives: a model that writes falls back to one that writes, and an embedding
// model to none, since another model's vectors are not comparable with its own (an index built
// from both would be silently wrong).
//
// They run over the merged set (configured and discovered), because a config may name a
// discovered model as a draft or fallback. Each error names the config field that made the
// reference, so the person knows which line to edit.
import { configError } from './config/config-errors.js';
import type { VocabularyFingerprint } from './vocabulary.js';
import { vocabularyMismatch } from './vocabulary.js';

export interface ReferenceNode {
  id: string;
  aliases: readonly string[];
  draftId?: string;
  fallbackId?: string;
  /** Index in the config file's `models`, for configured models; references come only from there. */
  configIndex?: number;
  /** null when the model's metadata could not be read: the vocabulary check is then skipped. */
  vocabulary: VocabularyFingerprint | null;
  /** An embedding model (its GGUF names a pooling, or `embeddings: true`): it only embeds. */
  embeds?: boolean;
}

export interface ReferenceProblem {
  /** The model whose field is wrong. */
  modelId: string;
  field: 'draft' | 'fallback';
  message: string;
}

/** Every broken reference among `nodes`, in config order. Pure. */
export function referenceProblems(nodes: readonly ReferenceNode[], file: string): ReferenceProblem[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const aliasOwner = new Map<string, string>();
  for (const node of nodes) for (const alias of node.aliases) aliasOwner.set(alias.toLowerCase(), node.id);
  const problems: ReferenceProblem[] = [];
  const reportedLoops = new Set<string>();

  for (const node of nodes) {
    const say = (field: 'draft' | 'fallback', expected: string, got: string, note: string) =>
      problems.push({ modelId: node.id, field, message: configError(file, ['models', node.configIndex ?? -1, field], expected, got, note) });

    for (const field of ['draft', 'fallback'] as const) {
      const target = field === 'draft' ? node.draftId : node.fallbackId;
      if (target === undefined) continue;
      if (target === node.id) {
        say(field, "expected another model's id", target, `a model cannot be its own ${field}`);
        continue;
      }
      if (!byId.has(target)) {
        const owner = aliasOwner.get(target.toLowerCase());
        const known = [...byId.keys()].sort();
        say(
          field,
          "expected another model's id",
          target,
          owner !== undefined
            ? `that is an alias of "${owner}"; ${field} takes the id`
            : `no model has that id; known ids: ${known.slice(0, 12).join(', ')}${known.length > 12 ? `, and ${known.length - 12} more` : ''}`,
        );
      }
    }

    const draft = node.draftId === undefined ? undefined : byId.get(node.draftId);
    if (draft && draft.id !== node.id) {
      if (draft.draftId !== undefined) {
        say('draft', 'expected a model without a draft of its own', draft.id, `it has the draft "${draft.draftId}"; a draft cannot have a draft`);
      } else if (node.vocabulary && draft.vocabulary) {
        const mismatch = vocabularyMismatch(node.vocabulary, draft.vocabulary);
        if (mismatch) say('draft', `expected a draft with the same vocabulary as "${node.id}"`, draft.id, mismatch);
      }
    }

    const fallback = node.fallbackId === undefined ? undefined : byId.get(node.fallbackId);
    if (fallback && fallback.id !== node.id) {
      if (node.embeds === true) {
        say('fallback', 'expected no fallback for an embedding model', fallback.id, "another model's vectors are not comparable with this one's, so an index would mix the two without a sign");
      } else if (fallback.embeds === true) {
        say('fallback', 'expected a fallback that writes text', fallback.id, 'it is an embedding model: it cannot answer the chats and completions it would stand in for');
      }
    }

    // Fallback chains: follow from here. Coming back here is a loop, reported once, by its
    // first member in config order; a chain that runs into a loop elsewhere is reported there.
    const chain = [node.id];
    let next = node.fallbackId;
    while (next !== undefined && byId.has(next) && next !== node.id && !chain.includes(next)) {
      chain.push(next);
      next = byId.get(next)!.fallbackId;
    }
    if (next === node.id && chain.length > 1) {
      const key = [...chain].sort().join('\u0000');
      if (!reportedLoops.has(key)) {
        reportedLoops.add(key);
        say('fallback', 'expected a fallback chain that ends', node.fallbackId!, `fallbacks loop: ${[...chain, node.id].join(' → ')}`);
      }
    }
  }
  return problems;
}
