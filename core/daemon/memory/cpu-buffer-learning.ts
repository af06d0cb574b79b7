// Which (engine build, CPU) a model's weights run on, and what its load log teaches about the
// CPU's extra weight buffers (core/catalog/cpu-buffers.ts).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { CatalogModel } from '../../catalog/catalog.js';
import { isCpuExtraBuffer, type BufferSize } from '../../engine/supervisor/memory/memory-measure.js';

/**
 * The embedded engine's build: node-llama-cpp's version, which pins the llama.cpp it ships.
 * Read from its package.json beside the resolved entry, without loading the package (it costs
 * the daemon tens of MB).
 */
export function embeddedEngineBuild(): string {
  try {
    let dir = dirname(createRequire(import.meta.url).resolve('node-llama-cpp'));
    for (let up = 0; up < 4; up++, dir = dirname(dir)) {
      try {
        const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
        if (pkg.name === 'node-llama-cpp') return `node-llama-cpp ${pkg.version ?? 'unknown'}`;
      } catch {
        // not this folder
      }
    }
  } catch {
    // not installed where the daemon can see it
  }
  return 'node-llama-cpp unknown';
}

/**
 * What a ready server's load log teaches, or null when it teaches nothing: only a model loaded
 * wholly on the CPU with repacking allowed, whose log printed its weights' buffers at all
 * (llama-server builds of late 2026 print them only at verbosity 4). A draft loads in the same
 * process and prints its own buffers, so its matrices count with the model's (`draft`: its
 * catalog entry, null when it has none, or it is not known); a projector's encoder is loaded
 * apart from llama.cpp's weights and is not priced this way, so a model with one teaches
 * nothing. Pure.
 */
export function cpuBufferLesson(
  model: Pick<CatalogModel, 'repack' | 'cpuMatrixBytes'> & Partial<Pick<CatalogModel, 'draftId' | 'projectorPath'>>,
  draft: Pick<CatalogModel, 'cpuMatrixBytes'> | null,
  buffers: readonly BufferSize[] | null,
): { bytesByType: Record<string, number>; extra: { bytes: number; buffers: string[] } } | null {
  if (!model.repack || model.cpuMatrixBytes === null || model.projectorPath !== undefined) return null;
  if (model.draftId !== undefined && draft?.cpuMatrixBytes == null) return null;
  if (buffers === null || buffers.length === 0) return null;
  const bytesByType = { ...model.cpuMatrixBytes };
  if (model.draftId !== undefined) for (const [type, bytes] of Object.entries(draft?.cpuMatrixBytes ?? {})) bytesByType[type] = (bytesByType[type] ?? 0) + bytes;
  const extra = buffers.filter((b) => isCpuExtraBuffer(b.buffer));
  return { bytesByType, extra: { bytes: extra.reduce((sum, b) => sum + b.bytes, 0), buffers: [...new Set(extra.map((b) => b.buffer))] } };
}
