// Issue 11's placement through the real daemon, on fake workstations of two and three GPUs:
// each GPU is its own budget, and a model goes whole on the tightest GPU that holds it; over
// GPUs of one class only when no single one does; over mixed classes only where its config
// allows; partly in host RAM when nothing else fits; evictions free the GPU the newcomer needs;
// and a model that fits nowhere is left out with a reason that names every GPU.
//
// The daemon runs as a child with the fake `lspci` and `nvidia-smi` of test/fixtures/fake-gpu
// first on PATH; FAKE_GPU_BOX picks the machine. The test plays "another program" by rewriting
// the memory the fake driver reports, so that each card leaves our models exactly the room a
// case needs, computed from the models' own estimates in /api/state. The engines are real and
// run on the CPU here; what they were told is read from the processes themselves: the embedded
// engine's CUDA_VISIBLE_DEVICES in /proc/<pid>/environ, its `-ngl` on its command line.
//
// One daemon per box, reused by the cases in order (each case says what it starts from): a
// model load is seconds on a loaded 2-core machine, and a daemon start is a second more.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';
import type { ModelView, Snapshot } from '../../core/contracts/snapshot.js';
import type { Placement } from '../../core/contracts/plan.js';
import { formatBytes } from '../../core/contracts/format-bytes.js';
import { eventually, isProcessAlive, makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';
import { writeMoeGguf } from '../support/moe-gguf.js';
import { writeStandInLlamaServer } from '../support/stand-in-llama-server.js';
import OpenAI from 'openai';

const MiB = 1024 ** 2;
const fakeDir = resolve(import.meta.dirname, '../fixtures/fake-gpu');
const RESERVE_MIB = 64;
/** "Another program" in the fake driver's process list; never one of ours. */
const OTHER_PID = 31337;
/** A model load on a loaded 2-core machine; a bound for the failure message, not a speed claim. */
const LOAD_MS = 120_000;

interface Card {
  bus: string;
  name: string;
  totalMiB: number;
  reservedMiB: number;
}

/** The cards of a fake box, from its devices.csv (what the fake nvidia-smi reports). */
function cardsOf(box: string): Card[] {
  return readFileSync(join(fakeDir, box, 'devices.csv'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => {
      const f = line.split(/,\s*/);
      return { bus: f[0] as string, name: f[1] as string, totalMiB: Number(f[3]), reservedMiB: Number(f[4]) };
    });
}

/** An engine of ours as the fake driver lists it: this pid holds `mib` on card `index`. */
interface Held {
  index: number;
  pid: number;
  mib: number;
}

/** A daemon on one fake box, and the fake driver's state it reads. */
class Rig {
  daemon!: DaemonProcess;
  readonly cards: Card[];
  private stateDir = '';

  constructor(
    readonly box: string,
    readonly workDir: string,
  ) {
    this.cards = cardsOf(box);
  }

  async start(configYaml: string): Promise<void> {
    this.stateDir = join(this.workDir, 'driver');
    await mkdir(this.stateDir, { recursive: true });
    await this.driverSays(this.cards.map((card) => this.quietBudget(card)));
    const configPath = join(this.workDir, 'config.yaml');
    await writeFile(configPath, configYaml);
    this.daemon = await startDaemonProcess({
      dataDir: await makeDataDir(),
      config: configPath,
      env: { PATH: `${fakeDir}${delimiter}${process.env.PATH ?? ''}`, FAKE_GPU_BOX: this.box, FAKE_GPU_STATE_DIR: this.stateDir },
    });
  }

  /** The fake nvidia-smi answers every call with `lines` and exits with `code`, until driverAnswers(). */
  async driverFails(lines: readonly string[], code: number): Promise<void> {
    await replace(join(this.stateDir, 'nvidia-smi-fails'), [...lines, String(code)].join('\n') + '\n');
  }

  async driverAnswers(): Promise<void> {
    await rm(join(this.stateDir, 'nvidia-smi-fails'), { force: true });
  }

  /** The fake nvidia-smi answers for the other cards and says it lost card `index` (fallen off the bus), until driverFinds(). */
  async driverLoses(index: number): Promise<void> {
    await replace(join(this.stateDir, 'nvidia-smi-lost'), `${(this.cards[index] as Card).bus}\n`);
  }

  async driverFinds(): Promise<void> {
    await rm(join(this.stateDir, 'nvidia-smi-lost'), { force: true });
  }

  async stop(): Promise<void> {
    await this.daemon?.stop();
    if (this.daemon) await removeDataDir(this.daemon.dataDir);
  }

  /** A card's budget with no other program on it, MiB. */
  quietBudget(card: Card): number {
    return card.totalMiB - card.reservedMiB - RESERVE_MIB;
  }

  /**
   * The fake driver: other programs use enough of each card to leave our models `budgetMiB[i]`
   * of card i, and `held` lists our engines as the real driver would (in its process list and
   * in memory.used, so the budget stays what it was).
   */
  async driverSays(budgetMiB: readonly number[], held: readonly Held[] = []): Promise<void> {
    const used = this.cards.map((card, i) => card.totalMiB - card.reservedMiB - RESERVE_MIB - (budgetMiB[i] as number));
    const ours = (i: number) => held.filter((h) => h.index === i).reduce((sum, h) => sum + h.mib, 0);
    await replace(join(this.stateDir, 'memory-used.csv'), this.cards.map((card, i) => `${card.bus}, ${(used[i] as number) + ours(i)}\n`).join(''));
    const apps = [
      ...this.cards.flatMap((card, i) => ((used[i] as number) > 0 ? [`${card.bus}, ${OTHER_PID}, ${used[i]}\n`] : [])),
      ...held.map((h) => `${(this.cards[h.index] as Card).bus}, ${h.pid}, ${h.mib}\n`),
    ];
    await replace(join(this.stateDir, 'compute-apps.csv'), apps.join(''));
  }

  /** Leaves each card `budgetMiB[i]` and waits until the daemon's sample shows it (it samples every 2 s). */
  async budgets(budgetMiB: readonly number[], held: readonly Held[] = []): Promise<Snapshot> {
    await this.driverSays(budgetMiB, held);
    return eventually(`the daemon sees budgets of ${budgetMiB.join(', ')} MiB`, async () => {
      const s = await this.daemon.state();
      return s.budget.gpus.map((g) => g.budgetBytes).join() === budgetMiB.map((b) => b * MiB).join() ? s : undefined;
    });
  }

  async load(id: string): Promise<void> {
    const res = await this.daemon.api(`/api/models/${id}/load`, { method: 'POST' });
    expect(res.status, await res.clone().text()).toBe(200);
  }

  async unload(id: string): Promise<void> {
    const res = await this.daemon.api(`/api/models/${id}/unload`, { method: 'POST' });
    expect(res.status, await res.clone().text()).toBe(200);
  }

  /** The state once `id` is ready with a placement that `where` accepts. */
  ready(id: string, what: string, where: (placement: Placement, model: ModelView) => boolean): Promise<Snapshot> {
    return eventually(
      `${id} ready ${what}`,
      async () => {
        const s = await this.daemon.state();
        const m = find(s, id);
        return m.status.state === 'ready' && m.upstream !== null && m.placement !== null && where(m.placement, m) ? s : undefined;
      },
      LOAD_MS,
    );
  }

  /** Waits until none of `ids` has a server. */
  gone(ids: readonly string[]): Promise<Snapshot> {
    return eventually(
      `${ids.join(', ')} unloaded`,
      async () => {
        const s = await this.daemon.state();
        return ids.every((id) => find(s, id).upstream === null && find(s, id).placement === null) ? s : undefined;
      },
      LOAD_MS,
    );
  }
}

/** Replaces a driver file whole: the fake nvidia-smi reads it at every call, and a file caught half-written reads as no GPU. */
async function replace(path: string, text: string): Promise<void> {
  await writeFile(`${path}.next`, text);
  await rename(`${path}.next`, path);
}

const find = (snapshot: Snapshot, id: string): ModelView => {
  const model = snapshot.models.find((m) => m.id === id);
  if (model === undefined) throw new Error(`/api/state has no model '${id}'`);
  return model;
};

/** The value of `name` in a process's own environment. */
function envOf(pid: number, name: string): string | undefined {
  return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find((v) => v.startsWith(`${name}=`))?.slice(name.length + 1);
}

/** What an engine process was told: the GPUs it may see (embedded engine) and its -ngl. */
function launchOf(pid: number): { visible: string | undefined; ngl: string | undefined } {
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const at = argv.indexOf('-ngl');
  return { visible: env.find((v) => v.startsWith('CUDA_VISIBLE_DEVICES='))?.slice('CUDA_VISIBLE_DEVICES='.length), ngl: at < 0 ? undefined : argv[at + 1] };
}

/** The word after `flag` on a process's command line (a llama-server's placement flags). */
function argOf(pid: number, flag: string): string | undefined {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const at = argv.indexOf(flag);
  return at < 0 ? undefined : argv[at + 1];
}

/**
 * A config's `engines` section with the stand-in llama-server (test/support/stand-in-llama-server.ts:
 * the daemon's real argv, a scripted engine): only llama-server splits a model by the plan's
 * shares (--tensor-split); node-llama-cpp takes none, so the embedded engine is never given a split.
 */
async function standInEngines(dir: string): Promise<string> {
  return `engines:\n  llamaServer: ${JSON.stringify(await writeStandInLlamaServer(dir))}\n`;
}

const ON_EMBEDDED = '    engine: embedded\n';
const ON_LLAMA_SERVER = '    engine: llama-server\n';

const indices = (p: Placement | null): number[] => (p?.devices ?? []).map((d) => d.index).sort((a, b) => a - b);
const layersOf = (p: Placement | null): number => (p?.devices ?? []).reduce((sum, d) => sum + d.layers, 0);
const mib = (bytes: number) => Math.round(bytes / MiB);

function modelEntry(id: string, path: string, priority: number, extra = ''): string {
  return `  - id: ${id}
    path: ${JSON.stringify(path)}
    ctx: 2048
    priority: ${priority}
    idleTtl: 10m
${extra}`;
}

/**
 * The engines run on the CPU here: each process's cost on a GPU is set to 1 MiB, not the 512 MiB
 * prior. The driver's answers are read every 2 s whether a model runs or not: each case rewrites
 * them and waits for a sample, most often with nothing loaded (the 10 s idle default's wait).
 */
const BUDGET_YAML = `budget:
  reserve: ${RESERVE_MIB}MiB
  engineOverhead: 1MiB
  idleSample: 2s
`;

let workDir: string;
let demo: DemoModels;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-placement-'));
  demo = await generateDemoModels(workDir);
});

afterAll(async () => {
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('placement on a workstation with two RTX 3090s and an RTX 4060', () => {
  const CHAT = 'chat';
  /** demo-chat on llama-server, the engine that splits by the plan's shares. */
  const SPLIT = 'chat-split';
  const MOE = 'moe-200g';
  let rig: Rig;
  /** demo-chat's estimate on one GPU, bytes (on the embedded engine; splitWhole: on llama-server), and its layers. */
  let whole: number;
  let splitWhole: number;
  let layers: number;
  let chatPid: number;

  beforeAll(async () => {
    rig = new Rig('two-3090-one-4060', join(workDir, 'three'));
    await mkdir(rig.workDir, { recursive: true });
    // A mixture of experts of about 200 GiB, sparse on disk: bigger than all three cards and
    // the host RAM together.
    const moePath = join(rig.workDir, 'moe-200g.gguf');
    await writeMoeGguf(moePath, { nLayer: 48, denseFirst: 0, nEmbd: 4096, nExpert: 128, nFfExpert: 1408, nFfDense: 0, nVocab: 151936, type: 'f16' });
    await rig.start(`modelDirs: []
${await standInEngines(rig.workDir)}${BUDGET_YAML}models:
${modelEntry(CHAT, demo.chat.path, 5, ON_EMBEDDED)}${modelEntry(SPLIT, demo.chat.path, 5, ON_LLAMA_SERVER)}${modelEntry(MOE, moePath, 1)}`);
    const start = await rig.daemon.state();
    whole = find(start, CHAT).estimateBytes.full;
    splitWhole = find(start, SPLIT).estimateBytes.full;
    layers = find(start, CHAT).layerCount ?? 0;
  });

  afterAll(async () => {
    await rig?.stop();
  });

  it('sees three GPUs, each its own budget', async () => {
    const s = await rig.daemon.state();
    expect(s.budget.mode).toBe('gpu');
    expect(s.budget.gpus.map((g) => g.name)).toEqual(['NVIDIA GeForce RTX 3090', 'NVIDIA GeForce RTX 3090', 'NVIDIA GeForce RTX 4060']);
    expect(s.budget.gpus.map((g) => g.budgetBytes)).toEqual(rig.cards.map((card) => rig.quietBudget(card) * MiB));
    expect(layers).toBeGreaterThanOrEqual(4);
  });

  it('leaves out a model that fits nowhere, with a reason that names each GPU and what was short there', async () => {
    const before = await rig.daemon.state();
    const need = find(before, MOE).estimateBytes.full;
    expect(need).toBeGreaterThan(before.budget.hostTotalBytes + before.budget.gpus.reduce((sum, g) => sum + g.budgetBytes, 0));
    await rig.load(MOE);
    const out = await eventually(`${MOE} left out`, async () => {
      const s = await rig.daemon.state();
      return s.plan?.unschedulable.find((u) => u.modelId === MOE) !== undefined && find(s, MOE).status.unschedulableReason !== null ? s : undefined;
    });
    const reason = find(out, MOE).status.unschedulableReason ?? '';
    expect(reason).toContain(`needs ${formatBytes(need)}`);
    out.budget.gpus.forEach((g, i) => expect(reason).toContain(`GPU ${i} ${g.name}: ${formatBytes(g.budgetBytes)} budget, all free`));
    expect(reason).toContain('a split across mixed GPUs is off for this model');
    expect(reason).toMatch(/part on the CPU needs host RAM, [\d.]+ GiB free/);
    expect(reason).toMatch(/it does not fit even with nothing else loaded$/);
    expect(out.plan?.unschedulable.find((u) => u.modelId === MOE)?.strict).toBe(true);
    expect(find(out, MOE).upstream).toBeNull();
    await rig.unload(MOE);
  });

  it('places a model whole on the tightest GPU that holds it: the 4060, not a 3090', async () => {
    await rig.load(CHAT);
    const s = await rig.ready(CHAT, 'whole on one GPU', (p) => p.kind === 'gpu');
    const chat = find(s, CHAT);
    expect(chat.placement).toEqual({ kind: 'gpu', devices: [{ index: 2, layers, bytes: whole }], cpuMoeLayers: 0, hostBytes: 0 });
    chatPid = chat.upstream!.pid;
    expect(launchOf(chatPid)).toEqual({ visible: '2', ngl: 'all' });
    expect(s.plan?.unschedulable.map((u) => u.modelId)).not.toContain(CHAT);
    // The memory picture shows it on the 4060 once a pass has counted it there.
    await eventually('chat in the 4060 picture', async () => {
      const holders = (await rig.daemon.state()).budget.gpus.map((g) => g.holders.filter((h) => h.kind === 'model').map((h) => h.modelId));
      return JSON.stringify(holders) === JSON.stringify([[], [], [CHAT]]) ? true : undefined;
    });
  });

  it("learns nothing new from a driver figure that is the model's estimate with its engine's runtime", async () => {
    // The driver lists the engine on the 4060 with what its placement said, to the MiB below.
    const figure = Math.floor(whole / MiB);
    await rig.budgets(rig.cards.map((card) => rig.quietBudget(card)), [{ index: 2, pid: chatPid, mib: figure }]);
    const s = await eventually('the figure measured', async () => {
      const state = await rig.daemon.state();
      return find(state, CHAT).measuredBytes === figure * MiB ? state : undefined;
    });
    // The runtime is priced beside the model (budget.engineOverhead), not learned into it as well.
    expect(find(s, CHAT).estimateBytes.full).toBe(whole);
  });

  it('splits a llama-server model over the two 3090s by the plan’s shares, never with the 4060, when no single GPU holds it; the embedded engine, which cannot split by shares, keeps part in host RAM', async () => {
    // Each card a tenth short of the whole model; the two 3090s hold it split, shares and a
    // compute buffer each (the pipeline's second one included).
    const room = Math.floor((whole * 0.9) / MiB);
    await rig.budgets([room, room, room]);
    // chat no longer fits where it runs: the daemon moves it without being asked, to part on one
    // card (node-llama-cpp takes no tensorSplit: a split would run by llama.cpp's shares, not the plan's).
    let s = await rig.ready(CHAT, 'partly on one GPU', (p) => p.kind === 'partial');
    expect(indices(find(s, CHAT).placement)).toHaveLength(1);
    expect(launchOf(find(s, CHAT).upstream!.pid).visible).toMatch(/^\d$/);
    expect(isProcessAlive(chatPid)).toBe(false);
    await rig.unload(CHAT);
    await rig.gone([CHAT]);

    await rig.load(SPLIT);
    s = await rig.ready(SPLIT, 'split over the 3090s', (p) => p.kind === 'split');
    const split = find(s, SPLIT);
    expect(indices(split.placement)).toEqual([0, 1]);
    expect(layersOf(split.placement)).toBe(layers);
    expect(split.placement?.hostBytes).toBe(0);
    for (const part of split.placement?.devices ?? []) expect(part.bytes).toBeLessThanOrEqual(room * MiB);
    // What runs is what was priced: each 3090's layers at its CUDA number, the output on the main one.
    const pid = split.upstream!.pid;
    const layersAt = (index: number) => split.placement?.devices.find((d) => d.index === index)?.layers;
    expect(argOf(pid, '--split-mode')).toBe('layer');
    expect(argOf(pid, '--tensor-split')).toBe(`${layersAt(0)},${layersAt(1)}`);
    expect(argOf(pid, '--main-gpu')).toBe(String(split.placement?.devices[0]?.index));

    // The driver's figures of a split, summed, are not the model's footprint on one GPU: nothing is learned from them.
    const held = (split.placement?.devices ?? []).map((d) => ({ index: d.index, pid, mib: Math.floor(d.bytes / MiB) }));
    await rig.budgets([room, room, room], held);
    const measured = await eventually('the split measured', async () => {
      const state = await rig.daemon.state();
      return find(state, SPLIT).measuredBytes === held.reduce((sum, h) => sum + h.mib * MiB, 0) ? state : undefined;
    });
    expect(find(measured, SPLIT).measuredBytes).toBeGreaterThan(whole);
    // Nothing learned from them: the estimate is still its own (llama-server prices fewer logits rows than the embedded engine).
    expect(find(measured, SPLIT).estimateBytes.full).toBe(splitWhole);
    expect(splitWhole).toBeLessThan(whole);
    await rig.unload(SPLIT);
    await rig.gone([SPLIT]);
  });

  it('falls back to part of it on the roomiest GPU and the rest in host RAM when no GPU and no same-class split holds it', async () => {
    // The 3090s together are short of even the split; the 4060 holds some of the layers.
    const small = Math.floor((whole * 0.4) / MiB);
    const roomier = Math.floor((whole * 0.6) / MiB);
    await rig.budgets([small, small, roomier]);
    // A change this small does not wake the controller by itself (it waits for 256 MiB); a request does.
    await rig.load(CHAT);
    const s = await rig.ready(CHAT, 'partly on the 4060', (p) => p.kind === 'partial');
    const chat = find(s, CHAT);
    const part = chat.placement?.devices[0];
    expect(indices(chat.placement)).toEqual([2]);
    expect(part?.layers).toBeGreaterThanOrEqual(1);
    expect(part?.layers).toBeLessThan(layers);
    expect(part?.bytes).toBeLessThanOrEqual(roomier * MiB);
    expect(chat.placement?.hostBytes).toBeGreaterThan(0);
    // -ngl counts the output layer as one more: N blocks on the GPU is -ngl N+1.
    expect(launchOf(chat.upstream!.pid)).toEqual({ visible: '2', ngl: String((part?.layers ?? 0) + 1) });
    expect(s.plan?.unschedulable).toEqual([]);
  });
});

describe('placement on the workstation with an RTX 4090 and an RTX 3060', () => {
  const CHAT = 'chat';
  const MIXED = 'chat-mixed';
  const TINY = 'tiny';
  const DRAFT = 'draft';
  let rig: Rig;
  let estimate: Record<string, number>;
  let tinyPid: number;

  beforeAll(async () => {
    rig = new Rig('workstation', join(workDir, 'two'));
    await mkdir(rig.workDir, { recursive: true });
    // The same file twice: only the second id allows a split across the two classes, on llama-server (the engine that splits by shares).
    await rig.start(`modelDirs: []
${await standInEngines(rig.workDir)}${BUDGET_YAML}models:
${modelEntry(CHAT, demo.chat.path, 5, ON_EMBEDDED)}${modelEntry(MIXED, demo.chat.path, 5, `    mixedSplit: true\n${ON_LLAMA_SERVER}`)}${modelEntry(TINY, demo.tiny.path, 2, ON_EMBEDDED)}${modelEntry(DRAFT, demo.draft.path, 1, ON_EMBEDDED)}`);
    const start = await rig.daemon.state();
    estimate = Object.fromEntries(start.models.map((m) => [m.id, m.estimateBytes.full]));
  });

  afterAll(async () => {
    await rig?.stop();
  });

  it('puts each model whole on the tightest GPU that holds it', async () => {
    // The 4090 leaves room for tiny alone; the 3060 for chat alone, and less than chat with draft.
    const tinyRoom = Math.ceil((estimate[TINY] as number) / MiB);
    const chatRoom = Math.ceil((estimate[CHAT] as number) / MiB);
    expect(tinyRoom * MiB).toBeLessThan(estimate[CHAT] as number);
    expect(chatRoom * MiB).toBeLessThan((estimate[CHAT] as number) + (estimate[DRAFT] as number));
    expect(tinyRoom * MiB - (estimate[TINY] as number)).toBeLessThan(estimate[DRAFT] as number);
    await rig.budgets([tinyRoom, chatRoom]);

    // Both cards hold tiny; the 4090 is the tighter fit.
    await rig.load(TINY);
    let s = await rig.ready(TINY, 'on one GPU', (p) => p.kind === 'gpu');
    expect(indices(find(s, TINY).placement)).toEqual([0]);
    tinyPid = find(s, TINY).upstream!.pid;
    expect(launchOf(tinyPid)).toEqual({ visible: '0', ngl: 'all' });

    // What tiny leaves on the 4090 is too little for draft: it goes on the 3060.
    await rig.load(DRAFT);
    s = await rig.ready(DRAFT, 'on one GPU', (p) => p.kind === 'gpu');
    expect(indices(find(s, DRAFT).placement)).toEqual([1]);
    expect(launchOf(find(s, DRAFT).upstream!.pid).visible).toBe('1');
  });

  it('evicts a lower-priority idle model on the GPU the newcomer needs, and leaves the one on the other GPU running', async () => {
    const before = await rig.daemon.state();
    const draftPid = find(before, DRAFT).upstream!.pid;
    // chat fits only on the 3060, and only without draft; tiny on the 4090 is in nobody's way.
    await rig.load(CHAT);
    const s = await rig.ready(CHAT, 'whole on the 3060', (p) => p.kind === 'gpu' && p.devices[0]?.index === 1);
    expect(launchOf(find(s, CHAT).upstream!.pid)).toEqual({ visible: '1', ngl: 'all' });
    expect(isProcessAlive(draftPid)).toBe(false);
    expect(find(s, DRAFT).upstream?.pid).not.toBe(draftPid);
    expect(indices(find(s, DRAFT).placement)).not.toContain(1);
    expect(find(s, TINY).upstream?.pid).toBe(tinyPid);
    expect(indices(find(s, TINY).placement)).toEqual([0]);
    expect(isProcessAlive(tinyPid)).toBe(true);
    // On the 3060, chat alone.
    expect(s.budget.gpus[1]?.holders.filter((h) => h.kind === 'model').map((h) => h.modelId)).toEqual([CHAT]);
  });

  it('refuses a split across the 4090 and the 3060 unless the model allows mixed GPUs, and then splits it', async () => {
    for (const id of [CHAT, TINY, DRAFT]) await rig.unload(id);
    await rig.gone([CHAT, TINY, DRAFT]);
    // Each card a tenth short of the whole model; the two together hold it split.
    const room = Math.floor(((estimate[CHAT] as number) * 0.9) / MiB);
    await rig.budgets([room, room]);

    // chat: no split across classes, so as many layers as fit on one card and the rest in host RAM.
    await rig.load(CHAT);
    let s = await rig.ready(CHAT, 'partly on one GPU', (p) => p.kind === 'partial');
    const partial = find(s, CHAT).placement;
    expect(indices(partial)).toEqual([0]);
    expect(partial?.hostBytes).toBeGreaterThan(0);
    expect(launchOf(find(s, CHAT).upstream!.pid)).toEqual({ visible: '0', ngl: String(layersOf(partial) + 1) });
    await rig.unload(CHAT);
    await rig.gone([CHAT]);

    // The same file under the id that allows it: split over both cards, nothing in host RAM.
    await rig.load(MIXED);
    s = await rig.ready(MIXED, 'split over the 4090 and the 3060', (p) => p.kind === 'mixed');
    const mixed = find(s, MIXED);
    expect(indices(mixed.placement)).toEqual([0, 1]);
    expect(layersOf(mixed.placement)).toBe(find(s, MIXED).layerCount);
    expect(mixed.placement?.hostBytes).toBe(0);
    for (const part of mixed.placement?.devices ?? []) expect(part.bytes).toBeLessThanOrEqual(room * MiB);
    const layersAt = (index: number) => mixed.placement?.devices.find((d) => d.index === index)?.layers;
    expect(argOf(mixed.upstream!.pid, '--split-mode')).toBe('layer');
    expect(argOf(mixed.upstream!.pid, '--tensor-split')).toBe(`${layersAt(0)},${layersAt(1)}`);
    // Nothing learned from a split's figures: the estimate is the one it started with (its own:
    // llama-server prices fewer logits rows than the embedded engine does for the same file).
    expect(find(s, MIXED).estimateBytes.full).toBe(estimate[MIXED]);
    expect(estimate[MIXED]).toBeLessThan(estimate[CHAT] as number);
  });
});

// Issue 23, items 1 and 2: the engines are told the driver's device numbers, which count
// neither an integrated GPU nor a BMC's display chip; and a driver tool that stops answering for
// a while evicts nothing. The boxes are fake machines of test/fixtures/fake-gpu written for this
// (igpu-4070, bmc-between): the display controllers are in their lspci listing, not in nvidia-smi's.

describe('device numbers on a desktop whose integrated GPU comes first in PCI order (UHD 770 at 00:02.0, RTX 4070)', () => {
  const CHAT = 'chat';
  let rig: Rig;

  beforeAll(async () => {
    rig = new Rig('igpu-4070', join(workDir, 'igpu'));
    await mkdir(rig.workDir, { recursive: true });
    await rig.start(`modelDirs: []
${BUDGET_YAML}models:
${modelEntry(CHAT, demo.chat.path, 5)}`);
  });

  afterAll(async () => {
    await rig?.stop();
  });

  it('counts the 4070 as GPU 0, CUDA0, and shows the UHD 770 as a display controller', async () => {
    const s = await rig.daemon.state();
    expect(s.budget.gpus.map((g) => [g.index, g.name, g.engineDevice])).toEqual([[0, 'NVIDIA GeForce RTX 4070', 'CUDA0']]);
    expect(s.budget.displays).toEqual([{ name: 'AlderLake-S GT1 [UHD Graphics 770]', busAddress: '0000:00:02.0' }]);
  });

  it("tells the engine CUDA's device 0, in PCI order", async () => {
    await rig.load(CHAT);
    const s = await rig.ready(CHAT, 'whole on the 4070', (p) => p.kind === 'gpu');
    expect(indices(find(s, CHAT).placement)).toEqual([0]);
    const pid = find(s, CHAT).upstream!.pid;
    expect(launchOf(pid)).toEqual({ visible: '0', ngl: 'all' });
    expect(envOf(pid, 'CUDA_DEVICE_ORDER')).toBe('PCI_BUS_ID');
  });
});

describe("device numbers on a server whose BMC display chip sits between two cards, a driver that stops answering, and a card that falls off the bus", () => {
  const CHAT = 'chat';
  let rig: Rig;
  let chatPid: number;

  beforeAll(async () => {
    rig = new Rig('bmc-between', join(workDir, 'bmc'));
    await mkdir(rig.workDir, { recursive: true });
    await rig.start(`modelDirs: []
${BUDGET_YAML}models:
${modelEntry(CHAT, demo.chat.path, 5)}`);
  });

  afterAll(async () => {
    await rig?.stop();
  });

  it("puts a model on the card after the ASPEED chip as GPU 1, and tells the engine CUDA's device 1", async () => {
    const start = await rig.daemon.state();
    expect(start.budget.gpus.map((g) => [g.index, g.engineDevice])).toEqual([[0, 'CUDA0'], [1, 'CUDA1']]);
    expect(start.budget.displays?.map((d) => d.busAddress)).toEqual(['0000:02:00.0']);
    // The first card leaves chat too little room; the second all of its own.
    const short = Math.floor((find(start, CHAT).estimateBytes.full * 0.5) / MiB);
    const [, second] = rig.cards;
    await rig.budgets([short, rig.quietBudget(second as Card)]);
    await rig.load(CHAT);
    const s = await rig.ready(CHAT, 'whole on the second card', (p) => p.kind === 'gpu');
    expect(indices(find(s, CHAT).placement)).toEqual([1]);
    chatPid = find(s, CHAT).upstream!.pid;
    expect(launchOf(chatPid)).toEqual({ visible: '1', ngl: 'all' });
  });

  it('holds the budget while nvidia-smi fails, says why on each GPU and in /metrics, evicts nothing, and sees the GPUs at the first sample after it answers', async () => {
    const before = await rig.daemon.state();
    await rig.driverFails(['Failed to initialize NVML: Driver/library version mismatch', 'NVML library version: 550.120'], 18);
    const held = await eventually('a warning on both GPUs', async () => {
      const s = await rig.daemon.state();
      return s.budget.gpus.length === 2 && s.budget.gpus.every((g) => g.warning !== undefined) ? s : undefined;
    });
    expect(held.budget.mode).toBe('gpu');
    expect(held.budget.gpus.map((g) => g.budgetBytes)).toEqual(before.budget.gpus.map((g) => g.budgetBytes));
    for (const gpu of held.budget.gpus) expect(gpu.warning).toContain('Failed to initialize NVML: Driver/library version mismatch');
    const metrics = await (await rig.daemon.api('/metrics')).text();
    expect(metrics).toMatch(/^llmtray_gpu_measure_failing\{gpu="1",name="NVIDIA RTX A4000"\} 1$/m);
    expect(find(held, CHAT).upstream?.pid).toBe(chatPid);
    expect(indices(find(held, CHAT).placement)).toEqual([1]);

    await rig.driverAnswers();
    const answeredAt = Date.now();
    // The first sample to end after nvidia-smi answered again may have asked it before; the one after it asked after.
    const straddling = await eventually('a sample that ended after nvidia-smi answered', async () => {
      const s = await rig.daemon.state();
      return s.budget.sampledAt > answeredAt ? s : undefined;
    });
    const next = await eventually('the next sample', async () => {
      const s = await rig.daemon.state();
      return s.budget.sampledAt > straddling.budget.sampledAt ? s : undefined;
    });
    expect(next.budget.mode).toBe('gpu');
    expect(next.budget.gpus.map((g) => [g.index, g.warning])).toEqual([[0, undefined], [1, undefined]]);
    expect(find(next, CHAT).upstream?.pid).toBe(chatPid);
    expect(isProcessAlive(chatPid)).toBe(true);
  });

  it('reports a card that falls off the bus by name, relaunches its model on the other card through the plan, quarantines nothing, and offers the card again once the driver reaches it', async () => {
    const [first, second] = rig.cards as [Card, Card];
    await rig.budgets([rig.quietBudget(first), rig.quietBudget(second)]);
    expect(indices(find(await rig.daemon.state(), CHAT).placement)).toEqual([1]);
    const onLostCard = find(await rig.daemon.state(), CHAT).upstream!.pid;

    // nvidia-smi answers for 01:00.0 and says it lost 03:00.0 (GPU 1), as the real driver does after an Xid 79.
    await rig.driverLoses(1);
    const moved = await rig.ready(CHAT, 'whole on the card that is left', (p) => p.kind === 'gpu' && p.devices[0]?.index === 0);
    expect(moved.budget.gpus.map((g) => [g.index, g.name])).toEqual([[0, 'NVIDIA RTX A4000']]);
    expect(moved.budget.goneGpus).toEqual([
      {
        index: 1,
        name: 'NVIDIA RTX A4000',
        busAddress: '0000:03:00.0',
        reason: 'GPU 1 NVIDIA RTX A4000 (0000:03:00.0) is gone (nvidia-smi says: GPU is lost. Reboot the system to recover this GPU): its budget is not offered and its models run elsewhere until it is measured again.',
      },
    ]);
    // A card that is gone is no failing tool: the card left is measured, not held.
    expect(moved.budget.gpus[0]?.warning).toBeUndefined();
    const pid = find(moved, CHAT).upstream!.pid;
    expect(pid).not.toBe(onLostCard);
    expect(isProcessAlive(onLostCard)).toBe(false);
    expect(launchOf(pid)).toEqual({ visible: '0', ngl: 'all' });
    expect(moved.models.filter((m) => m.status.state === 'quarantined')).toEqual([]);
    const metrics = await (await rig.daemon.api('/metrics')).text();
    expect(metrics).toMatch(/^llmtray_gpu_gone\{gpu="1",name="NVIDIA RTX A4000"\} 1$/m);

    // Back (a reset, a resume that worked): offered again at the next sample, its number unchanged; chat stays where it runs.
    await rig.driverFinds();
    const back = await eventually('the card offered again', async () => {
      const s = await rig.daemon.state();
      return s.budget.gpus.length === 2 ? s : undefined;
    });
    expect(back.budget.gpus.map((g) => [g.index, g.engineDevice, g.budgetBytes])).toEqual([
      [0, 'CUDA0', rig.quietBudget(first) * MiB],
      [1, 'CUDA1', rig.quietBudget(second) * MiB],
    ]);
    expect(back.budget.goneGpus).toBeUndefined();
    expect(find(back, CHAT).upstream?.pid).toBe(pid);
  });

  it('moves a pinned model off a card that falls off the bus too: a pin keeps a model loaded, not on a card that is gone', async () => {
    const before = await rig.daemon.state();
    // Where the last test left it: on GPU 0, the card that stayed.
    expect(indices(find(before, CHAT).placement)).toEqual([0]);
    const onLostCard = find(before, CHAT).upstream!.pid;
    const pin = await rig.daemon.api(`/api/models/${CHAT}/pin`, { method: 'POST' });
    expect(pin.status, await pin.clone().text()).toBe(200);

    // nvidia-smi loses 01:00.0 (GPU 0) this time: chat is pinned there.
    await rig.driverLoses(0);
    const moved = await rig.ready(CHAT, 'whole on GPU 1, the card that is left', (p) => p.kind === 'gpu' && p.devices[0]?.index === 1);
    expect(moved.budget.goneGpus?.map((g) => [g.index, g.busAddress])).toEqual([[0, '0000:01:00.0']]);
    expect(find(moved, CHAT).pinned).toBe(true);
    const pid = find(moved, CHAT).upstream!.pid;
    expect(pid).not.toBe(onLostCard);
    expect(isProcessAlive(onLostCard)).toBe(false);
    expect(launchOf(pid)).toEqual({ visible: '1', ngl: 'all' });
    expect(moved.models.filter((m) => m.status.state === 'quarantined')).toEqual([]);

    await rig.driverFinds();
    await eventually('the card offered again', async () => ((await rig.daemon.state()).budget.gpus.length === 2 ? true : undefined));
    const unpin = await rig.daemon.api(`/api/models/${CHAT}/unpin`, { method: 'POST' });
    expect(unpin.status, await unpin.clone().text()).toBe(200);
  });
});

describe('a fault of the card in an engine\'s log, on the server with a BMC chip between its two cards', () => {
  const FAULTY = 'faulty';
  let rig: Rig;
  let faultFile: string;

  beforeAll(async () => {
    rig = new Rig('bmc-between', join(workDir, 'bmc-fault'));
    await mkdir(rig.workDir, { recursive: true });
    faultFile = join(rig.workDir, 'fault.log');
    await rig.start(`modelDirs: []
${BUDGET_YAML}${await standInEngines(rig.workDir)}models:
${modelEntry(FAULTY, demo.chat.path, 5, `${ON_LLAMA_SERVER}    args: ${JSON.stringify(['--fake-fault-file', faultFile])}\n`)}`);
  });

  afterAll(async () => {
    await rig?.stop();
  });

  /** A chat request to `id`, whose answer (if any) does not matter: it is what meets the fault. */
  const ask = async (id: string): Promise<void> => {
    const client = new OpenAI({ baseURL: rig.daemon.endpoint, apiKey: 'any-key-works', maxRetries: 0 });
    await client.chat.completions.create({ model: id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }).catch(() => undefined);
  };

  /** Loads FAULTY on GPU 1 (the first card leaves it too little room), then gives both cards room. */
  const onSecondCard = async (): Promise<number> => {
    const [first, second] = rig.cards as [Card, Card];
    const start = await rig.daemon.state();
    await rig.budgets([Math.floor((find(start, FAULTY).estimateBytes.full * 0.5) / MiB), rig.quietBudget(second)]);
    await rig.load(FAULTY);
    const s = await rig.ready(FAULTY, 'on the second card', (p) => p.kind === 'gpu' && p.devices[0]?.index === 1);
    await rig.budgets([rig.quietBudget(first), rig.quietBudget(second)]);
    return find(s, FAULTY).upstream!.pid;
  };

  it('suspects the card a kernel fault names, with the engine\'s words, counts a crash that names the device, and offers the card again once nvidia-smi measures it', async () => {
    const before = await onSecondCard();
    // llama.cpp's own lines (test/fixtures/llama-logs/cuda-unspecified-launch-failure.log): CUDA's device 1 is the plan's GPU 1 here.
    await writeFile(faultFile, readFileSync(resolve(import.meta.dirname, '../fixtures/llama-logs/cuda-unspecified-launch-failure.log'), 'utf8'));
    await ask(FAULTY);
    const said = await eventually('the daemon suspects GPU 1', async () => (/GPU 1 NVIDIA RTX A4000 \(0000:03:00\.0\) is suspect: faulty's engine said: CUDA error: unspecified launch failure/.test(rig.daemon.stderr()) ? true : undefined));
    expect(said).toBe(true);
    // Its ladder counts a crash (an engine that faults at every request is still parked after five), in words that name the device.
    // Its own line, written apart from the suspicion's: read once it has come.
    const crashLine = "faulty's server ended on its own (crash): CUDA error: unspecified launch failure (on CUDA device 1: a fault of the card or of the engine)";
    await eventually('the daemon counts the crash', async () => (rig.daemon.stderr().includes(crashLine) ? true : undefined));
    const relaunched = await rig.ready(FAULTY, 'again, on a fresh server', (_p, m) => m.upstream !== null && m.upstream.pid !== before);
    expect(find(relaunched, FAULTY).status.state).not.toBe('quarantined');
    // Healthy by nvidia-smi's next measurement: offered again.
    const back = await eventually('both cards offered', async () => {
      const s = await rig.daemon.state();
      return s.budget.gpus.length === 2 && s.budget.goneGpus === undefined ? s : undefined;
    });
    expect(back.budget.gpus.map((g) => g.index)).toEqual([0, 1]);
  });

  it('calls a card that fell off the bus the machine in the way, not the model\'s crash, and relaunches the model on the card that is left', async () => {
    await rig.unload(FAULTY);
    await rig.gone([FAULTY]);
    const before = await onSecondCard();
    await writeFile(faultFile, 'NVRM: Xid (PCI:0000:03:00): 79, GPU has fallen off the bus.\nNVRM: GPU 0000:03:00.0: GPU has fallen off the bus.\n');
    await rig.driverLoses(1);
    await ask(FAULTY);
    const moved = await rig.ready(FAULTY, 'on the card that is left', (p, m) => m.upstream?.pid !== before && p.kind === 'gpu' && p.devices[0]?.index === 0);
    expect(rig.daemon.stderr()).toContain("faulty's server ended on its own (environment): NVRM: Xid (PCI:0000:03:00): 79, GPU has fallen off the bus. (a fault of GPU 0000:03:00.0, not of the model)");
    expect(moved.budget.goneGpus?.map((g) => g.index)).toEqual([1]);
    expect(find(moved, FAULTY).status.state).not.toBe('quarantined');
    await rig.driverFinds();
  });
});

/** The RTX 4070 desktop serving `chat` (priority 5) and `tiny` (priority 1): the move-up cases' daemon, in its own folder. */
async function chatOverTinyOn4070(folder: string, tinyExtra = ''): Promise<Rig> {
  const rig = new Rig('igpu-4070', join(workDir, folder));
  await mkdir(rig.workDir, { recursive: true });
  await rig.start(`modelDirs: []
${BUDGET_YAML}models:
${modelEntry('chat', demo.chat.path, 5)}${modelEntry('tiny', demo.tiny.path, 1, tinyExtra)}`);
  return rig;
}

describe('moving a model back up on the desktop with an RTX 4070, once what displaced it has gone', () => {
  const CHAT = 'chat';
  const TINY = 'tiny';
  let rig: Rig;

  beforeAll(async () => {
    rig = await chatOverTinyOn4070('move-up');
  });

  afterAll(async () => {
    await rig?.stop();
  });

  it('runs chat partly in host RAM beside a pinned tiny, and relaunches it whole on the GPU once tiny is unpinned and idle, stopping tiny', async () => {
    const start = await rig.daemon.state();
    const chat = find(start, CHAT).estimateBytes.full;
    const tiny = find(start, TINY).estimateBytes.full;
    // Room for chat alone, not for chat beside tiny.
    await rig.budgets([Math.floor((chat + tiny / 2) / MiB)]);
    const pin = await rig.daemon.api(`/api/models/${TINY}/pin`, { method: 'POST' });
    expect(pin.status, await pin.clone().text()).toBe(200);
    let s = await rig.ready(TINY, 'whole on the 4070', (p) => p.kind === 'gpu');
    const tinyPid = find(s, TINY).upstream!.pid;
    // Asked for once, tiny stays wanted (its idleTtl is 10 minutes) once unpinned: nothing but a move-up evicts it.
    const client = new OpenAI({ baseURL: rig.daemon.endpoint, apiKey: 'any-key-works', maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: TINY, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
    expect(answer.choices[0]?.message.content).toEqual(expect.any(String));

    // A pinned model is never evicted: chat, higher though it ranks, goes partly to host RAM.
    await rig.load(CHAT);
    s = await rig.ready(CHAT, 'partly on the 4070', (p) => p.kind === 'partial');
    const partialPid = find(s, CHAT).upstream!.pid;
    expect(find(s, CHAT).status.next).toBeNull();

    // Unpinned, tiny is an idle (wanted) model of lower priority in chat's way: once it has been idle the settle time, chat moves up.
    const unpin = await rig.daemon.api(`/api/models/${TINY}/unpin`, { method: 'POST' });
    expect(unpin.status, await unpin.clone().text()).toBe(200);
    s = await rig.ready(CHAT, 'whole on the 4070', (p) => p.kind === 'gpu');
    const movedPid = find(s, CHAT).upstream!.pid;
    expect(movedPid).not.toBe(partialPid);
    expect(isProcessAlive(partialPid)).toBe(false);
    expect(isProcessAlive(tinyPid)).toBe(false);
    expect(launchOf(movedPid)).toEqual({ visible: '0', ngl: 'all' });
    expect(find(s, CHAT).status.next).toBeNull();
  });

});

describe('moving a model up once the busy model that displaced it has gone idle, on the desktop with an RTX 4070', () => {
  const CHAT = 'chat';
  const TINY = 'tiny';
  let rig: Rig;

  beforeAll(async () => {
    // tiny is held busy by stopping its engine mid-answer (below): no hang may be called meanwhile.
    rig = await chatOverTinyOn4070('move-up-busy', '    hangLimit: 10m\n');
  });

  afterAll(async () => {
    await rig?.stop();
  });

  it('runs chat partly in host RAM while tiny streams, and moves it whole onto the GPU once tiny has gone idle, stopping tiny', async () => {
    const start = await rig.daemon.state();
    // Room for chat alone, not for chat beside tiny.
    await rig.budgets([Math.floor((find(start, CHAT).estimateBytes.full + find(start, TINY).estimateBytes.full / 2) / MiB)]);
    const client = new OpenAI({ baseURL: rig.daemon.endpoint, apiKey: 'any-key-works', maxRetries: 0 });
    await client.chat.completions.create({ model: TINY, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    await rig.ready(TINY, 'whole on the 4070', (p) => p.kind === 'gpu');

    // tiny busy for as long as the test needs: its engine stopped (SIGSTOP) after the first chunk
    // of a stream, so its request stays in flight. Streams one after another left gaps between
    // them, and a pass in a gap evicted the idle tiny for chat at once (seen beside busy loops).
    const tinyPid = find(await rig.daemon.state(), TINY).upstream!.pid;
    const stream = await client.chat.completions.create({ model: TINY, messages: [{ role: 'user', content: 'go on' }], max_tokens: 64, stream: true });
    const chunks = stream[Symbol.asyncIterator]();
    await chunks.next();
    process.kill(tinyPid, 'SIGSTOP');
    let partialPid: number;
    try {
      await client.chat.completions.create({ model: CHAT, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
      const s = await rig.ready(CHAT, 'partly on the 4070 beside a busy tiny', (p) => p.kind === 'partial');
      partialPid = find(s, CHAT).upstream!.pid;
    } finally {
      process.kill(tinyPid, 'SIGCONT');
    }
    for (let next = await chunks.next(); next.done !== true; next = await chunks.next());
    // Meanwhile its status says what it waits for (issue 36 asked why a slowed chat stayed slow).
    await eventually(
      'chat saying it moves up once tiny has been idle',
      async () => (/moving up to GPU 0 when tiny has been idle/.test(find(await rig.daemon.state(), CHAT).status.next ?? '') ? true : undefined),
      LOAD_MS,
    );

    // tiny is idle now, of lower priority and unpinned: once it has been idle the settle time, chat moves up.
    const moved = await rig.ready(CHAT, 'whole on the 4070', (p) => p.kind === 'gpu');
    expect(find(moved, CHAT).upstream!.pid).not.toBe(partialPid);
    expect(isProcessAlive(tinyPid)).toBe(false);
  }, 4 * LOAD_MS);
});
