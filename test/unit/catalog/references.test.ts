import { describe, expect, test } from 'vitest';
import { referenceProblems, type ReferenceNode } from '../../../core/catalog/references.js';
import { vocabularyFingerprint } from '../../../core/catalog/vocabulary.js';

const FILE = '/cfg/config.yaml';
const vocab = (spell: string) => vocabularyFingerprint({ model: 'llama', tokens: Array.from({ length: 50 }, (_, i) => `${spell}${i}`), bosId: 1, eosId: 2, addBos: true });
const node = (id: string, index: number, more: Partial<ReferenceNode> = {}): ReferenceNode => ({ id, aliases: [], configIndex: index, vocabulary: vocab('t'), ...more });
const messages = (nodes: ReferenceNode[]) => referenceProblems(nodes, FILE).map((p) => p.message);

describe('references between models', () => {
  test('well-formed drafts and fallback chains raise nothing', () => {
    expect(messages([node('big', 0, { draftId: 'small', fallbackId: 'mid' }), node('mid', 1, { fallbackId: 'small' }), node('small', 2)])).toEqual([]);
  });

  test('a fallback gives the answers its model gives: one that writes for one that writes, none for an embedding model', () => {
    expect(messages([node('chat', 0, { fallbackId: 'encoder' }), node('encoder', 1, { embeds: true })])).toEqual([
      `${FILE}: models[0].fallback: expected a fallback that writes text, got "encoder" (it is an embedding model: it cannot answer the chats and completions it would stand in for)`,
    ]);
    expect(messages([node('encoder', 0, { embeds: true, fallbackId: 'other-encoder' }), node('other-encoder', 1, { embeds: true })])).toEqual([
      `${FILE}: models[0].fallback: expected no fallback for an embedding model, got "other-encoder" (another model's vectors are not comparable with this one's, so an index would mix the two without a sign)`,
    ]);
    expect(messages([node('chat', 0, { fallbackId: 'small' }), node('small', 1, { embeds: false })])).toEqual([]);
  });

  test('an unknown draft or fallback lists the ids that exist', () => {
    expect(messages([node('big', 0, { draftId: 'tiny' }), node('small', 1)])).toEqual([
      `${FILE}: models[0].draft: expected another model's id, got "tiny" (no model has that id; known ids: big, small)`,
    ]);
  });

  test('an alias where an id belongs says which id it stands for', () => {
    expect(messages([node('big', 0, { fallbackId: 'gpt-3.5' }), node('small', 1, { aliases: ['gpt-3.5'] })])).toEqual([
      `${FILE}: models[0].fallback: expected another model's id, got "gpt-3.5" (that is an alias of "small"; fallback takes the id)`,
    ]);
  });

  test('a model cannot be its own draft or fallback', () => {
    expect(messages([node('a', 0, { draftId: 'a', fallbackId: 'a' })])).toEqual([
      `${FILE}: models[0].draft: expected another model's id, got "a" (a model cannot be its own draft)`,
      `${FILE}: models[0].fallback: expected another model's id, got "a" (a model cannot be its own fallback)`,
    ]);
  });

  test('a fallback loop is reported once, at its first member, with the whole loop', () => {
    expect(messages([node('x', 0, { fallbackId: 'a' }), node('a', 1, { fallbackId: 'b' }), node('b', 2, { fallbackId: 'c' }), node('c', 3, { fallbackId: 'a' })])).toEqual([
      `${FILE}: models[1].fallback: expected a fallback chain that ends, got "b" (fallbacks loop: a → b → c → a)`,
    ]);
  });

  test('a draft of a draft is refused', () => {
    expect(messages([node('big', 0, { draftId: 'mid' }), node('mid', 1, { draftId: 'small' }), node('small', 2)])).toEqual([
      `${FILE}: models[0].draft: expected a model without a draft of its own, got "mid" (it has the draft "small"; a draft cannot have a draft)`,
    ]);
  });

  test('a draft with another vocabulary is refused; an unreadable one is left to its metadata error', () => {
    expect(messages([node('big', 0, { draftId: 'small' }), node('small', 1, { vocabulary: vocab('u') })])).toEqual([
      expect.stringMatching(/^\/cfg\/config\.yaml: models\[0\]\.draft: expected a draft with the same vocabulary as "big", got "small" \(token texts differ within the first 50 tokens/),
    ]);
    expect(messages([node('big', 0, { draftId: 'small' }), node('small', 1, { vocabulary: null })])).toEqual([]);
  });
});
