// The names a model on the Hugging Face Hub goes by, as a person types them to pull it and as an
// app sends them once it is pulled: `hf.co/OWNER/REPO:QUANT` (Ollama's and llama.cpp's form,
// test/fixtures/hub-api G1), `OWNER/REPO:QUANT`, `OWNER/REPO` alone, or a file inside the repo
// (`OWNER/REPO/Model-Q4_K_M.gguf`). One grammar, here, because the CLI, the admin API, the
// dashboard and the catalog's aliases must agree on what a name means. Pure: no imports.

/** What a pull name asks for. */
export interface HubModelName {
  /** `OWNER/REPO`, as typed (the Hub treats it without regard to case). */
  repo: string;
  /** Which GGUF of the repo: a quant its file name holds, a file by path, or the repo's default (G2). */
  select: { kind: 'quant'; quant: string } | { kind: 'file'; path: string } | { kind: 'default' };
}

/** The Hub's own rule for an owner's or a repo's name: letters, digits, `-`, `_`, `.`, at most 96. */
const SEGMENT = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?$/;
const QUANT = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,40}$/;
const PREFIX = /^(?:https?:\/\/)?(?:hf\.co|huggingface\.co)\//i;

/** The name's parts, or a sentence saying what a name looks like. */
export function parseHubModelName(text: string): { ok: true; name: HubModelName } | { ok: false; message: string } {
  const trimmed = text.trim().replace(PREFIX, '');
  const bad = (why: string) => ({
    ok: false as const,
    message: `'${text}' is not a model on the Hugging Face Hub: ${why}. Name one as hf.co/OWNER/REPO:QUANT (e.g. hf.co/bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M), OWNER/REPO, or OWNER/REPO/FILE.gguf.`,
  });
  const [owner, repoAndQuant, ...rest] = trimmed.split('/');
  if (owner === undefined || repoAndQuant === undefined || owner === '' || repoAndQuant === '') return bad('it needs an owner and a repo');
  const colon = repoAndQuant.indexOf(':');
  const repoName = colon < 0 ? repoAndQuant : repoAndQuant.slice(0, colon);
  if (!SEGMENT.test(owner)) return bad(`'${owner}' is not an owner's name`);
  if (!SEGMENT.test(repoName)) return bad(`'${repoName}' is not a repo's name`);
  const repo = `${owner}/${repoName}`;
  if (colon >= 0) {
    const quant = repoAndQuant.slice(colon + 1);
    if (rest.length > 0) return bad('a quant (:QUANT) and a file cannot both be named');
    if (!QUANT.test(quant)) return bad(`'${quant}' is not a quant's name`);
    return { ok: true, name: { repo, select: { kind: 'quant', quant } } };
  }
  if (rest.length === 0) return { ok: true, name: { repo, select: { kind: 'default' } } };
  const path = rest.join('/');
  if (rest.some((part) => part === '' || part === '.' || part === '..')) return bad(`'${path}' is not a file's path in the repo`);
  if (!/\.gguf$/i.test(path)) return bad(`'${path}' is not a GGUF file`);
  return { ok: true, name: { repo, select: { kind: 'file', path } } };
}

/** The name a pulled model is served under: `hf.co/OWNER/REPO:QUANT`, or `hf.co/OWNER/REPO` for the repo's only model. */
export function hubAlias(repo: string, quant: string | undefined): string {
  return quant === undefined ? `hf.co/${repo}` : `hf.co/${repo}:${quant}`;
}

const QUANT_SUFFIX = /(?:^|[-_.])((?:I?Q\d+(?:_[A-Z0-9]+)*)|BF16|F16|F32|FP16)$/i;

/** The quant a GGUF's name ends in, as written ("Qwen2.5-7B-Instruct-Q4_K_M" → "Q4_K_M"); undefined when none. */
export function quantInName(stem: string): string | undefined {
  return QUANT_SUFFIX.exec(stem)?.[1];
}

const QUANT_TOKEN = /^(?:I?Q\d+(?:_[A-Z0-9]+)*|BF16|F16|F32|FP16)$/i;

/**
 * The quant a GGUF's name holds, as a pull matches it (G1: "the file whose name holds the
 * quant"): the one at its end, else the last one inside it (`Model-IQ3_M.imatrix` → IQ3_M).
 */
export function heldQuant(stem: string): string | undefined {
  return quantInName(stem) ?? stem.split(/[-.]/).reverse().find((token) => QUANT_TOKEN.test(token));
}
