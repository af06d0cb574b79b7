// One file's bytes into its blob: resumed, checked, and never left where a model is looked for.
//
// The bytes go to `blobs/SHA256.incomplete` (test/fixtures/hub-api C3); a pull cut by the
// network, a sleep or a restart continues with `Range: bytes=SIZE-` from what that file holds
// (C4, E6). Once every byte is there, the sha256 of the whole file is compared with the Hub's
// (X-Linked-Etag, the tree's lfs.oid): a match is renamed to `blobs/SHA256`; a mismatch is
// deleted and said, since resuming from bytes that are wrong can never come right.
//
// Why not @huggingface/hub's `downloadFileToCacheDir`: it starts over on every call (no Range),
// checks nothing, reports no progress, and cannot be cancelled.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { errorMessage } from '../contracts/error-message.js';
import { formatBytes } from '../contracts/format-bytes.js';
import { PullRefused } from '../contracts/hub/pulls.js';
import type { HubAccess } from './hub-access.js';
import type { FileMetadata } from './hub-api.js';
import type { RepoCache } from './hf-cache.js';

export interface BlobDownload {
  cache: RepoCache;
  /** What the path's resolve said (the CDN location, the sha256 and the size). */
  metadata: FileMetadata;
  /** The file's path in the repo, for the sentences. */
  path: string;
  access: HubAccess;
  signal: AbortSignal;
  /** Told the bytes on disk so far, after each chunk written (and once at the start, with what was already there). */
  onBytes: (received: number) => void;
  /** Told when every byte is here and the check begins. */
  onVerifying?: () => void;
}

/** The bytes already on disk for this blob: the whole blob, or the `.incomplete` so far. Never rejects. */
export async function bytesOnDisk(cache: RepoCache, sha256: string): Promise<{ whole: boolean; bytes: number }> {
  const whole = await stat(cache.blobPath(sha256)).catch(() => undefined);
  if (whole) return { whole: true, bytes: whole.size };
  const partial = await stat(cache.incompletePath(sha256)).catch(() => undefined);
  return { whole: false, bytes: partial?.size ?? 0 };
}

/**
 * Fetches the blob unless it is there. Resolves with its path once whole and checked; rejects
 * with PullRefused (a mismatch, a full disk, the Hub's refusal) or the signal's AbortError.
 */
export async function downloadBlob(job: BlobDownload): Promise<string> {
  const { cache, metadata, signal } = job;
  const blob = cache.blobPath(metadata.sha256);
  const incomplete = cache.incompletePath(metadata.sha256);
  const there = await bytesOnDisk(cache, metadata.sha256);
  if (there.whole) {
    job.onBytes(there.bytes);
    return blob;
  }
  await mkdir(dirname(incomplete), { recursive: true });
  let start = there.bytes;
  if (start > metadata.sizeBytes) {
    // More bytes than the file has: not this file's beginning. Start over.
    await truncate(incomplete, 0);
    start = 0;
  }
  job.onBytes(start);
  if (start < metadata.sizeBytes) await fetchInto(job, incomplete, start);
  job.onVerifying?.();
  const actual = await sha256Of(incomplete, signal);
  if (actual !== metadata.sha256) {
    await rm(incomplete, { force: true });
    throw new PullRefused(
      502,
      'sha256_mismatch',
      `${job.path} arrived with sha256 ${actual}, but the Hub says ${metadata.sha256}: the bytes are not the file's, so they were deleted. Pull again; if it happens again, the network or HF_ENDPOINT (${job.access.endpoint}) changes what it carries.`,
    );
  }
  await rename(incomplete, blob);
  return blob;
}

async function fetchInto(job: BlobDownload, incomplete: string, start: number): Promise<void> {
  const { metadata, signal } = job;
  // The token goes to the Hub only: a CDN's URL carries its own signature, and a token sent to another host is a token given away.
  const sameHost = new URL(metadata.location).origin === new URL(job.access.endpoint).origin;
  const auth: Record<string, string> = sameHost && job.access.token !== undefined ? { authorization: `Bearer ${job.access.token}` } : {};
  const res = await fetch(metadata.location, {
    headers: { ...(start > 0 ? { range: `bytes=${start}-` } : {}), 'accept-encoding': 'identity', ...auth },
    signal,
  }).catch((error: unknown) => {
    if (signal.aborted) throw error;
    throw new PullRefused(502, 'download_failed', `Cannot fetch ${job.path} from ${new URL(metadata.location).host}: ${(error as { cause?: Error }).cause?.message ?? (error as Error).message}; pull again to resume from ${formatBytes(start)}.`);
  });
  if (res.status !== 200 && res.status !== 206) {
    throw new PullRefused(502, 'download_failed', `${new URL(metadata.location).host} answered ${res.status} for ${job.path}; pull again to resume from ${formatBytes(start)}.`);
  }
  // A server that ignored the Range sends the whole file: it is written from the start.
  const from = res.status === 206 ? rangeStart(res.headers.get('content-range')) : 0;
  if (from !== start && from !== 0) throw new PullRefused(502, 'download_failed', `${new URL(metadata.location).host} answered bytes from ${from} when asked from ${start} for ${job.path}; pull again.`);
  if (from === 0 && start > 0) await truncate(incomplete, 0);
  let received = from;
  // pipeline, not a hand-written loop: it ends the file on every path (a cut, a cancel, a full
  // disk) and reports the first error once, where a write's ENOSPC would otherwise escape.
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, next) {
      received += chunk.length;
      job.onBytes(received);
      next(null, chunk);
    },
  });
  try {
    const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
    await pipeline(body, counter, createWriteStream(incomplete, { flags: from === 0 ? 'w' : 'a' }), { signal });
  } catch (error) {
    if (signal.aborted) throw signal.reason ?? error;
    if ((error as NodeJS.ErrnoException).code === 'ENOSPC') {
      throw new PullRefused(507, 'disk_full', `The disk under ${dirname(incomplete)} filled up after ${formatBytes(received)} of ${job.path}'s ${formatBytes(metadata.sizeBytes)}; the pull stopped. Free ${formatBytes(metadata.sizeBytes - received)} there (or set HF_HUB_CACHE to a disk with room) and pull again: it resumes from what it has.`);
    }
    throw new PullRefused(502, 'download_cut', `The download of ${job.path} was cut after ${formatBytes(received)} of ${formatBytes(metadata.sizeBytes)} (${errorMessage(error)}); pull again and it resumes from there.`);
  }
  if (received !== metadata.sizeBytes) {
    throw new PullRefused(502, 'download_cut', `The download of ${job.path} ended after ${formatBytes(received)} of ${formatBytes(metadata.sizeBytes)}; pull again and it resumes from there.`);
  }
}

function rangeStart(contentRange: string | null): number {
  const match = /^bytes (\d+)-/.exec(contentRange ?? '');
  return match ? Number(match[1]) : 0;
}

async function sha256Of(path: string, signal: AbortSignal): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { signal })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
