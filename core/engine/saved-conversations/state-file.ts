// The head of a llama.cpp sequence-state file (llama_state_seq_save_file, which both
// node-llama-cpp's saveStateToFile and llama-server's `/slots?action=save` write): a magic,
// a version, the token count and the tokens, then the KV data. Read here so the store knows
// what conversation a file holds without a side file that could disagree with it, and so a
// file cut short or overwritten is found before llama.cpp is asked to load it.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';

/** 'ggsq', llama.cpp's LLAMA_STATE_SEQ_MAGIC. */
const SEQ_MAGIC = 0x67677371;
/** LLAMA_STATE_SEQ_VERSIONs whose head is magic, version, count, tokens (3: node-llama-cpp 3.21.1's llama.cpp). */
const SEQ_VERSIONS: readonly number[] = [2, 3];
const HEAD_BYTES = 12;

/**
 * llama-server (since its multimodal prompts) stores its own packing in the state's token list:
 * LLAMA_TOKEN_NULL (-1), its version (1), the count and the tokens, then the media chunks'
 * positions and data (tools/server/server-common.cpp, server_tokens::serialize). The conversation
 * is the tokens inside; node-llama-cpp writes them plain. Throws CorruptStateFile on a packing
 * of another version or one cut short: its tokens cannot be known.
 */
const LLAMA_TOKEN_NULL = -1;
const SERVER_TOKENS_VERSION = 1;

function unpackedTokens(held: number[]): number[] {
  if (held[0] !== LLAMA_TOKEN_NULL) return held;
  if (held[1] !== SERVER_TOKENS_VERSION) throw new CorruptStateFile(`llama-server's token packing version ${String(held[1])}, this build reads ${SERVER_TOKENS_VERSION}`);
  const n = held[2] ?? -1;
  if (n < 0 || 3 + n > held.length) throw new CorruptStateFile(`llama-server's token packing claims ${n} tokens in ${held.length}`);
  return held.slice(3, 3 + n);
}

export class CorruptStateFile extends Error {
  override name = 'CorruptStateFile';
}

/**
 * The tokens a state file holds. Blocks for one read of the head (4 bytes a token). Throws
 * CorruptStateFile when the magic or version is not llama.cpp's, or the file is too short for
 * its own token list plus some KV data; the caller's I/O errors otherwise.
 */
export async function readStateTokens(path: string): Promise<{ tokens: number[]; bytes: number }> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const head = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await file.read(head, 0, HEAD_BYTES, 0);
    if (bytesRead < HEAD_BYTES) throw new CorruptStateFile(`${size} bytes, shorter than a state file's head`);
    const magic = head.readUInt32LE(0);
    const version = head.readUInt32LE(4);
    const count = head.readUInt32LE(8);
    if (magic !== SEQ_MAGIC) throw new CorruptStateFile(`not a llama.cpp sequence state (magic 0x${magic.toString(16)})`);
    if (!SEQ_VERSIONS.includes(version)) throw new CorruptStateFile(`state version ${version}, this build reads ${SEQ_VERSIONS.join(' and ')}`);
    const tokenBytes = count * 4;
    if (HEAD_BYTES + tokenBytes >= size) throw new CorruptStateFile(`${count} tokens claimed in ${size} bytes, no room for their KV data`);
    const list = Buffer.alloc(tokenBytes);
    await file.read(list, 0, tokenBytes, HEAD_BYTES);
    const held: number[] = [];
    for (let i = 0; i < count; i++) held.push(list.readInt32LE(i * 4));
    return { tokens: unpackedTokens(held), bytes: size };
  } finally {
    await file.close();
  }
}

/**
 * The SHA-256 of a file, streamed. Why the store keeps one beside each state: llama.cpp
 * aborts the whole process (GGML_ASSERT) on a state whose KV data is cut short, so a file is
 * checked against its digest before any engine is asked to load it. Blocks for one read of
 * the file (about a second per GB).
 */
export async function fileDigest(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
