// A catalog model for the daemon's unit tests, with every field a real one has.
import type { CatalogModel } from '../../core/catalog/catalog.js';

const MiB = 1024 ** 2;

export function catalogModel(id: string, overrides: Partial<CatalogModel> = {}): CatalogModel {
  return {
    id,
    aliases: [],
    path: `/models/${id}.gguf`,
    sizeBytes: 100 * MiB,
    ctx: 4096,
    limits: {},
    priority: 0,
    pinnedByDefault: false,
    gpuLayers: 'all',
    mixedSplit: false,
    repack: true,
    cpuMatrixBytes: null,
    idleTtlMs: 600_000,
    hangLimitMs: 60_000,
    engine: 'auto',
    args: [],
    engineArgs: {},
    env: {},
    estimate: { weightsBytes: 100 * MiB, kvBytesPerToken: 16 * 1024, contextTokens: 4096, computeBytes: 20 * MiB },
    metadataError: null,
    definitionHash: `hash-${id}`,
    source: 'config',
    ...overrides,
  };
}
