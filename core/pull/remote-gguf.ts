// A GGUF's header read from the Hub before the file is fetched, with Range requests (test/fixtures
// /hub-api E6): what choosing a quant by what fits this machine needs (its layers, its context,
// its KV cache per token) costs a few MB of a file that may be tens of GB.
//
// A GgufSource over HTTP: the header reader asks for small reads at growing offsets, so the bytes
// are fetched in blocks of BLOCK_BYTES and kept, and each read is served from them.
import { readGgufFactsFrom, type MetadataResult } from '../catalog/gguf-metadata.js';
import type { GgufSource } from '../catalog/gguf-reader.js';
import type { FileMetadata } from './hub-api.js';

const BLOCK_BYTES = 1024 * 1024;

/** The facts of the GGUF at `metadata.location` (its first part's, for a split model). Never rejects. */
export function remoteGgufFacts(metadata: FileMetadata, path: string, signal?: AbortSignal): Promise<MetadataResult> {
  return readGgufFactsFrom(httpSource(metadata, signal), path);
}

function httpSource(metadata: FileMetadata, signal?: AbortSignal): GgufSource {
  const blocks = new Map<number, Promise<Buffer>>();
  const block = (index: number): Promise<Buffer> => {
    let fetched = blocks.get(index);
    if (fetched === undefined) {
      const start = index * BLOCK_BYTES;
      const end = Math.min(metadata.sizeBytes, start + BLOCK_BYTES) - 1;
      fetched = fetch(metadata.location, { headers: { range: `bytes=${start}-${end}` }, ...(signal ? { signal } : {}) }).then(async (res) => {
        if (res.status !== 206) throw new Error(`${new URL(metadata.location).host} answered ${res.status} to a Range request for bytes ${start}-${end}`);
        return Buffer.from(await res.arrayBuffer());
      });
      blocks.set(index, fetched);
    }
    return fetched;
  };
  return {
    async read(buffer, offset, length, position) {
      let done = 0;
      while (done < length && position + done < metadata.sizeBytes) {
        const at = position + done;
        const bytes = await block(Math.floor(at / BLOCK_BYTES));
        const from = at % BLOCK_BYTES;
        const copied = bytes.copy(buffer, offset + done, from, Math.min(bytes.length, from + (length - done)));
        if (copied === 0) break;
        done += copied;
      }
      return { bytesRead: done };
    },
    stat: async () => ({ size: metadata.sizeBytes }),
  };
}
