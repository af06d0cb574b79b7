// What the catalog learns from each measurement of a ready server (the supervisor's memory
// loop): a model's own device footprint (learned-footprint.ts), and the CPU's extra weight
// buffers from the first load wholly on the CPU (cpu-buffer-learning.ts). Here at the root,
// because a lesson joins the engine's figures to the catalog's store, and neither layer knows
// the other.
import type { Catalog, CatalogModel } from '../../catalog/catalog.js';
import type { CpuBufferRatios, CpuBufferStore } from '../../catalog/cpu-buffers.js';
import type { Log } from '../../controller/effects.js';
import type { Controller } from '../../controller/controller.js';
import { errorMessage } from '../../contracts/error-message.js';
import { formatBytes } from '../../contracts/format-bytes.js';
import type { Supervisor } from '../../engine/supervisor/supervisor.js';
import type { Endpoint, Measurement } from '../../engine/supervisor/supervisor-types.js';
import { cpuBufferLesson } from './cpu-buffer-learning.js';
import { footprintToLearn } from './learned-footprint.js';

export function memoryLessons(deps: {
  catalog: Catalog;
  cpuBuffers: CpuBufferStore;
  cpuBufferKeyOf: (model: CatalogModel) => string | null;
  /** This CPU's prior (cpu-buffer-prior.ts): how a load that brings several new types shares its extra buffers among them. */
  cpuBufferPrior: CpuBufferRatios;
  supervisor: Pick<Supervisor, 'modelBuffers'>;
  controller: Pick<Controller, 'placement'>;
  gpuMode: () => boolean;
  cpuOnly: () => boolean;
  runtimeBytes: (model: CatalogModel) => number;
  log: Log;
}): (modelId: string, measurement: Measurement, at: Endpoint) => Promise<void> {
  const { catalog, cpuBuffers, log } = deps;
  /** The first load wholly on the CPU of a model with matrix types this (build, CPU) has not seen teaches their extra buffers. */
  const learnCpuBuffers = async (model: CatalogModel): Promise<void> => {
    const key = deps.cpuBufferKeyOf(model);
    const draft = model.draftId === undefined ? null : (catalog.resolve(model.draftId) ?? null);
    const lesson = cpuBufferLesson(model, draft, deps.supervisor.modelBuffers(model.id));
    if (key === null || lesson === null || !cpuBuffers.teaches(key, lesson.bytesByType)) return;
    const learned = await cpuBuffers.learn(key, lesson.bytesByType, lesson.extra, deps.cpuBufferPrior).catch((error: unknown) => {
      log.warn(`remembering the CPU's weight buffers failed: ${errorMessage(error)}`);
      return true;
    });
    if (!learned) return;
    log.info(`learned the CPU's extra weight buffers from '${model.id}': ${lesson.extra.buffers.join(', ') || 'none'} (${formatBytes(lesson.extra.bytes)})`);
    await catalog.reload();
  };
  return async (modelId, measurement, at) => {
    const model = catalog.resolve(modelId);
    if (model === undefined) return;
    // Learn only from a device figure (the driver's, or llama.cpp's buffers) at the full level
    // in GPU mode: RSS also holds the runtime and mapped file pages, which the budget does not
    // count, and an engine the driver does not list (on the CPU, in a container) has no other.
    // Only a model whole on one GPU, less its engine's runtime (learned-footprint.ts).
    const learned = footprintToLearn(measurement, { level: at.level, placement: deps.controller.placement(model.id) }, { gpuMode: deps.gpuMode(), runtimeBytes: deps.runtimeBytes(model) });
    if (learned !== null) await catalog.learnFromMeasurement(model.id, learned).catch(() => undefined);
    if (deps.cpuOnly() || at.level === 'minimal') await learnCpuBuffers(model);
  };
}
