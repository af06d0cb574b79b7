// The config that serves the demo models. `serve --demo` writes it, and so do the checks that
// run the real daemon on them (the memory-truth test, `npm run gpu-check`); one writer, so the
// models they check are the models the demo serves, and a change to the demo's set reaches all.
import type { DemoModels } from '../catalog/demo/demo-models.js';
import { llamaServerToolNudge } from '../catalog/demo/spm-vocab.js';

/** What a caller changes; a field left out is left out of the file, so the config's default holds. */
export interface DemoConfigOptions {
  /** Comment lines for the top of the file, without their '# ': who writes it, and why it is as it is. */
  comment?: readonly string[];
  /** `engines.warmSpare`. A check of one engine's memory turns it off: an engine adopted from the spare holds another RSS than one started fresh. */
  warmSpare?: boolean;
  /** `engines.savedConversations`. A check of a model's steady footprint turns it off: saving an idle slot holds memory for a while (see daemon-memory-truth). */
  savedConversations?: boolean;
  /** `budget.reserve`, bytes. */
  reserveBytes?: number;
  /** `budget.limit`, bytes. */
  limitBytes?: number;
  /** `budget.engineOverhead`, bytes: an engine's runtime as someone measured it, instead of what the daemon learns. */
  engineOverheadBytes?: number;
  /**
   * demo-chat falls back to demo-tiny, and the two answer to `chat` and `tiny`: what the demo
   * shows a person. A check wants neither: a fallback would answer for a demo-chat that failed.
   */
  fallbackAndAliases: boolean;
  /** Lists demo-broken, the corrupt model that shows quarantine. */
  broken: boolean;
  /** Lists demo-embed, the embedding model /v1/embeddings answers with (the catalog reads its pooling; no `embeddings:` needed). */
  embed: boolean;
}

const CHAT_CONTEXT = 4096;
const SMALL_CONTEXT = 2048;
/** demo-embed's trained length, as an encoder's context is. */
const EMBED_CONTEXT = 512;

export function demoConfigText(models: DemoModels, options: DemoConfigOptions): string {
  const budget = [
    ...(options.reserveBytes === undefined ? [] : [`  reserve: ${options.reserveBytes}`]),
    ...(options.limitBytes === undefined ? [] : [`  limit: ${options.limitBytes}`]),
    ...(options.engineOverheadBytes === undefined ? [] : [`  engineOverhead: ${options.engineOverheadBytes}`]),
  ];
  const lines = [
    ...(options.comment ?? []).map((line) => `# ${line}`),
    'modelDirs: []',
    ...(options.warmSpare === undefined && options.savedConversations === undefined
      ? []
      : [
          'engines:',
          ...(options.warmSpare === undefined ? [] : [`  warmSpare: ${options.warmSpare}`]),
          ...(options.savedConversations === undefined ? [] : [`  savedConversations: ${options.savedConversations}`]),
        ]),
    ...(budget.length === 0 ? [] : ['budget:', ...budget]),
    'models:',
    '  - id: demo-chat',
    `    path: ${JSON.stringify(models.chat.path)}`,
    `    ctx: ${CHAT_CONTEXT}`,
    '    draft: demo-draft',
    ...(options.fallbackAndAliases ? ['    fallback: demo-tiny', '    aliases: [chat]'] : []),
    '  - id: demo-draft',
    `    path: ${JSON.stringify(models.draft.path)}`,
    `    ctx: ${CHAT_CONTEXT}`,
    '  - id: demo-tiny',
    `    path: ${JSON.stringify(models.tiny.path)}`,
    `    ctx: ${SMALL_CONTEXT}`,
    ...(options.fallbackAndAliases ? ['    aliases: [tiny]'] : []),
    // The README's tool example calls demo-tiny; the comment tells a person reading the file why.
    '    # llama-server only: <tool_call> and the end of text raised, so a required tool call is answered with the call (a plain answer there ends at once)',
    `    engineArgs: { llama-server: ${JSON.stringify(llamaServerToolNudge())} }`,
    ...(options.broken ? ['  - id: demo-broken', `    path: ${JSON.stringify(models.broken.path)}`, `    ctx: ${SMALL_CONTEXT}`] : []),
    ...(options.embed ? ['  - id: demo-embed', `    path: ${JSON.stringify(models.embed.path)}`, `    ctx: ${EMBED_CONTEXT}`] : []),
  ];
  return `${lines.join('\n')}\n`;
}
