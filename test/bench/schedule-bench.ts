// How schedule's (one pool) and place's (per GPU) time grows with the number of models.
//
// Why it matters: the controller calls place on every reconcile pass, and a quadratic
// scan that is invisible at 10 models stalls the loop at 10,000 (a catalog of every GGUF on a
// disk plus their quantizations). The target is 10 ms at 10,000 models and growth no worse
// than n log n, which is what one sort costs. A seeded generator keeps every run comparable.
import { performance } from 'node:perf_hooks';
import { seededRandom } from '../../core/catalog/demo/seeded-random.js';
import type { Desired, Resident } from '../../core/policy/index.js';
import { schedule } from '../support/schedule-oracle.js';
import { place, type Device, type PlacedDesired, type PlacedResident } from '../../core/policy/place.js';

const SIZES = [100, 1_000, 10_000];
const GiB = 1024 ** 3;
/** Enough repetitions for a stable median without making `npm run bench` slow. */
const MIN_RUNS = 30;
const MIN_SAMPLE_MS = 500;

interface Workload {
  desired: Desired[];
  resident: Resident[];
  budget: number;
}

/**
 * A mixed catalog: about 70 % desired, half of everything resident, a few pinned, some
 * active, a fifth with drafts, priorities 0 to 4, footprints 0.5 to 20 GiB, and a budget of a
 * third of what is desired, so that admissions, evictions and reasons are all exercised.
 */
function workload(n: number, seed: number): Workload {
  const random = seededRandom(seed);
  const chance = (p: number): boolean => random.next() < p;
  const desired: Desired[] = [];
  const resident: Resident[] = [];
  let desiredBytes = 0;
  for (let i = 0; i < n; i++) {
    const modelId = `model-${i}`;
    const footprint = Math.round((0.5 + random.next() * 19.5) * GiB);
    const draft = chance(0.2) ? { modelId: `draft-${i}`, footprint: Math.round(random.next() * GiB) } : undefined;
    const lastUsed = Math.floor(random.next() * 1_000);
    if (chance(0.7)) {
      const wanted: Desired = { modelId, footprint, priority: Math.floor(random.next() * 5), pinned: chance(0.01) };
      if (draft !== undefined) wanted.draft = draft;
      if (chance(0.8)) wanted.lastUsed = lastUsed;
      desired.push(wanted);
      desiredBytes += footprint + (draft?.footprint ?? 0);
    }
    if (chance(0.5)) {
      resident.push({ modelId, footprint: footprint + (draft?.footprint ?? 0), pinned: chance(0.01), inUse: chance(0.05), lastUsed });
    }
  }
  return { desired, resident, budget: Math.round(desiredBytes / 3) };
}

function medianMs(run: () => void): number {
  for (let i = 0; i < 10; i++) run(); // warm-up: let the JIT settle before timing
  const samples: number[] = [];
  const started = performance.now();
  while (samples.length < MIN_RUNS || performance.now() - started < MIN_SAMPLE_MS) {
    const t0 = performance.now();
    run();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] ?? Number.NaN;
}

const nLogN = (n: number): number => n * Math.log2(n);

export async function runScheduleBench(): Promise<void> {
  console.log('schedule: median time by number of models');
  console.log('       n   median ms   growth   n·log n growth');
  let previous: { n: number; ms: number } | null = null;
  for (const n of SIZES) {
    const { desired, resident, budget } = workload(n, 0x5eed + n);
    const ms = medianMs(() => schedule(desired, resident, budget));
    const growth = previous === null ? '' : `${(ms / previous.ms).toFixed(1)}×`;
    const expected = previous === null ? '' : `${(nLogN(n) / nLogN(previous.n)).toFixed(1)}×`;
    console.log(`${String(n).padStart(8)}   ${ms.toFixed(3).padStart(9)}   ${growth.padStart(6)}   ${expected.padStart(14)}`);
    previous = { n, ms };
  }
}

/**
 * The same catalogs on a workstation of four GPUs (two classes), with a layer cost for half of
 * the models (so splits and part on the CPU are costed) and the residents spread over the cards.
 * Target: 20 ms at 10,000 models.
 */
function placeWorkload(n: number, seed: number): { desired: PlacedDesired[]; resident: PlacedResident[]; devices: Device[]; hostFree: number } {
  const base = workload(n, seed);
  const random = seededRandom(seed ^ 0x9e37);
  const perGpu = Math.round(base.budget / 4);
  const devices: Device[] = [0, 1, 2, 3].map((index) => ({ index, name: `GPU ${index}`, deviceClass: index < 2 ? 'rtx-4090' : 'rtx-3060', budgetBytes: perGpu }));
  const desired = base.desired.map((d): PlacedDesired => {
    if (random.next() < 0.5) return d;
    const layers = 16 + Math.floor(random.next() * 64);
    const perLayerBytes = Math.floor((d.footprint * 0.9) / layers);
    const layerCost = { layers, perLayerBytes, expertBytesPerLayer: random.next() < 0.2 ? Math.floor(perLayerBytes * 0.7) : 0, mainBytes: d.footprint - layers * perLayerBytes, computeBytesPerDevice: 0 };
    return { ...d, layerCost, mixedSplit: random.next() < 0.3 };
  });
  const resident = base.resident.map((r): PlacedResident => ({ ...r, placement: { kind: 'gpu', devices: [{ index: Math.floor(random.next() * 4), layers: 0, bytes: r.footprint }], cpuMoeLayers: 0, hostBytes: 0 } }));
  return { desired, resident, devices, hostFree: base.budget };
}

export async function runPlaceBench(): Promise<void> {
  console.log('place: median time by number of models, on 4 GPUs of 2 classes (target: 20 ms at 10,000)');
  console.log('       n   median ms   growth   n·log n growth');
  let previous: { n: number; ms: number } | null = null;
  for (const n of SIZES) {
    const { desired, resident, devices, hostFree } = placeWorkload(n, 0x5eed + n);
    const ms = medianMs(() => place(desired, resident, devices, hostFree));
    const growth = previous === null ? '' : `${(ms / previous.ms).toFixed(1)}×`;
    const expected = previous === null ? '' : `${(nLogN(n) / nLogN(previous.n)).toFixed(1)}×`;
    console.log(`${String(n).padStart(8)}   ${ms.toFixed(3).padStart(9)}   ${growth.padStart(6)}   ${expected.padStart(14)}`);
    previous = { n, ms };
  }
}
