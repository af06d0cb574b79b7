// `npm run gpu-check` where it can be tested without a GPU: for real on a machine without one
// (it must say nothing was checked, with its own exit code, never "pass"), and its comparison
// on the fake 3-GPU box, where this test plays the driver: every engine the script's daemons
// start is listed in the fake nvidia-smi's process list with a figure this test chooses from
// the engine's placement in /api/state, as a real driver lists a process on each GPU it uses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { pathFor } from '../../core/contracts/admin-routes.js';
import type { Snapshot } from '../../core/contracts/snapshot.js';
import { EXIT } from '../../scripts/gpu-check/checks.js';

const REPO = resolve(import.meta.dirname, '..', '..');
const SCRIPT = join(REPO, 'dist', 'scripts', 'gpu-check', 'gpu-check.js');
const fakeDir = resolve(import.meta.dirname, '../fixtures/fake-gpu');
const BOX = 'two-3090-one-4060';
const MiB = 1024 ** 2;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runGpuCheck(args: readonly string[], env: Record<string, string>): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [SCRIPT, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.once('exit', (code) => done({ code, stdout, stderr }));
  });
}

const busOf = (index: number): string => {
  const lines = readFileSync(join(fakeDir, BOX, 'devices.csv'), 'utf8').split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
  return (lines[index] ?? '').split(',')[0] ?? '';
};

/**
 * The fake driver for gpu-check's engines: every 150 ms, each embedded engine whose model lives
 * under `workDir` is listed on each GPU of its placement with that placement's bytes × `factor`,
 * and memory.used holds what is listed (so the daemon's budget is what it would be).
 */
class EngineDriver {
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  private readonly written = new Map<string, string>();

  constructor(
    private readonly workDir: string,
    private readonly stateDir: string,
    private readonly factor: (modelId: string, gpu: number) => number,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), 150);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const engines = this.engines();
      const state = engines.length === 0 ? null : await this.daemonState();
      const rows: { bus: string; pid: number; mib: number }[] = [];
      for (const engine of engines) {
        const placement = state?.models.find((m) => m.id === engine.modelId)?.placement;
        for (const d of placement?.devices ?? []) rows.push({ bus: busOf(d.index), pid: engine.pid, mib: Math.round((d.bytes * this.factor(engine.modelId, d.index)) / MiB) });
      }
      const used = new Map<string, number>();
      for (const row of rows) used.set(row.bus, (used.get(row.bus) ?? 0) + row.mib);
      await this.write('memory-used.csv', [0, 1, 2].map((i) => `${busOf(i)}, ${used.get(busOf(i)) ?? 0}\n`).join(''));
      await this.write('compute-apps.csv', rows.map((r) => `${r.bus}, ${r.pid}, ${r.mib}\n`).join(''));
    } catch {
      // A daemon between runs, a process gone mid-read: the next tick sees the settled picture.
    } finally {
      this.ticking = false;
    }
  }

  /**
   * Replaces a driver file whole, and only when it changes: the fake nvidia-smi reads these at
   * every call, and a file caught half-written (truncated, not yet filled) reads as no GPU at all.
   */
  private async write(name: string, text: string): Promise<void> {
    if (this.written.get(name) === text) return;
    const path = join(this.stateDir, name);
    await writeFile(`${path}.next`, text);
    await rename(`${path}.next`, path);
    this.written.set(name, text);
  }

  /** Live embedded engines of the script's models, with the model id each serves (its --alias). */
  private engines(): { pid: number; modelId: string }[] {
    const out: { pid: number; modelId: string }[] = [];
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      let argv: string[];
      try {
        argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      } catch {
        continue;
      }
      const model = argv[argv.indexOf('-m') + 1] ?? '';
      const alias = argv[argv.indexOf('--alias') + 1];
      if (argv.some((a) => a.endsWith(join('engine', 'embedded', 'main.js'))) && model.startsWith(this.workDir) && alias !== undefined) out.push({ pid: Number(name), modelId: alias.split(',')[0] ?? alias });
    }
    return out;
  }

  /** The snapshot of the script's daemon now running (the newest run folder's). */
  private async daemonState(): Promise<Snapshot | null> {
    const runs = readdirSync(this.workDir).filter((n) => n.startsWith('run-')).sort();
    const newest = runs[runs.length - 1];
    if (newest === undefined) return null;
    const dataDir = join(this.workDir, newest, 'data');
    const info = JSON.parse(await readFile(join(dataDir, 'daemon.json'), 'utf8')) as { origin: string };
    const token = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
    const res = await fetch(`${info.origin}${pathFor('getSnapshot')}`, { headers: { authorization: `Bearer ${token}` } });
    return res.ok ? ((await res.json()) as Snapshot) : null;
  }
}

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'llmtray-gpu-check-test-'));
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('npm run gpu-check', () => {
  it('says plainly that nothing was checked, with its own exit code, on a machine without a GPU', async () => {
    // No nvidia-smi, lspci or amd-smi anywhere on PATH: the script starts its daemon by node's
    // own path, and the daemon finds no GPU.
    const emptyPath = join(scratch, 'no-tools');
    await mkdir(emptyPath);
    const run = await runGpuCheck([], { PATH: emptyPath });
    expect(run.code, run.stdout + run.stderr).toBe(EXIT.noGpu);
    expect(run.stdout).toContain('the daemon found no GPU whose memory it can measure');
    expect(run.stdout).toContain('nothing was checked; this is not a pass');
    expect(run.stdout).not.toMatch(/gpu-check: pass/);
    // The speed phase is on by default, and must not run (nor say it ran) without a GPU: neither the race nor the returning conversation.
    expect(run.stdout).not.toMatch(/^(## )?speed/m);
    expect(run.stdout).not.toMatch(/^return|returning conversation/m);
  });

  it('runs no race with --only speed on a machine without a GPU: the same exit 3, the same words', async () => {
    const emptyPath = join(scratch, 'no-tools-speed');
    await mkdir(emptyPath);
    const run = await runGpuCheck(['--only', 'speed'], { PATH: emptyPath });
    expect(run.code, run.stdout + run.stderr).toBe(EXIT.noGpu);
    expect(run.stdout).toContain('nothing was checked; this is not a pass');
    expect(run.stdout).not.toMatch(/^(## )?speed/m);
    expect(run.stdout).not.toContain('engine race');
    expect(run.stdout).not.toMatch(/^return|returning conversation/m);
  });

  it('refuses what it does not know by name before it starts anything', async () => {
    const only = await runGpuCheck(['--only', 'memory'], {});
    expect(only.code).toBe(EXIT.incomplete);
    expect(only.stderr).toContain("--only: unknown 'memory'; expected speed");
    expect(only.stdout).toBe('');
    const rounds = await runGpuCheck([], { LLMTRAY_RACE_ROUNDS: 'two' });
    expect(rounds.code).toBe(EXIT.incomplete);
    expect(rounds.stderr).toContain("LLMTRAY_RACE_ROUNDS must be a whole number of rounds, at least 1; got 'two'");
    expect(rounds.stdout).toBe('');
    // The returning conversation's variables too, before the memory checks rather than after them.
    const returnRounds = await runGpuCheck([], { LLMTRAY_RETURN_REAL_ROUNDS: '0' });
    expect(returnRounds.code).toBe(EXIT.incomplete);
    expect(returnRounds.stderr).toContain("LLMTRAY_RETURN_REAL_ROUNDS must be a whole number of rounds, at least 1; got '0'");
    expect(returnRounds.stdout).toBe('');
    const budget = await runGpuCheck(['--only', 'speed'], { LLMTRAY_RETURN_BUDGET_S: '2m' });
    expect(budget.code).toBe(EXIT.incomplete);
    expect(budget.stderr).toContain("LLMTRAY_RETURN_BUDGET_S must be a whole number of seconds, 0 or more; got '2m'");
    expect(budget.stdout).toBe('');
    // With --no-return they are not read.
    expect((await runGpuCheck(['--no-return', '--bad'], { LLMTRAY_RETURN_BUDGET_S: '2m' })).stderr).toContain("unknown argument '--bad'");
  });

  describe('on the fake box with two RTX 3090s and an RTX 4060', () => {
    const fakeEnv = (stateDir: string) => ({ PATH: `${fakeDir}${delimiter}${process.env.PATH ?? ''}`, FAKE_GPU_BOX: BOX, FAKE_GPU_STATE_DIR: stateDir });

    /** gpu-check on the fake box, this test playing the driver; with --no-speed unless `speed` (the race would run real engines on this machine's CPU). */
    async function withDriver(name: string, factor: (modelId: string, gpu: number) => number, args: readonly string[], env: Record<string, string> = {}, speed = false): Promise<Run> {
      const workDir = join(scratch, name);
      const stateDir = join(scratch, `${name}-driver`);
      await mkdir(workDir, { recursive: true });
      await mkdir(stateDir, { recursive: true });
      await writeFile(join(stateDir, 'memory-used.csv'), [0, 1, 2].map((i) => `${busOf(i)}, 0\n`).join(''));
      await writeFile(join(stateDir, 'compute-apps.csv'), '');
      const driver = new EngineDriver(workDir, stateDir, factor);
      driver.start();
      try {
        return await runGpuCheck(['--work-dir', workDir, ...(speed ? [] : ['--no-speed']), ...args], { ...fakeEnv(stateDir), ...env });
      } finally {
        driver.stop();
      }
    }

    it('passes when every figure is within 10 % of its estimate: one GPU, part in host RAM; no split on the embedded engine, and it says so', async () => {
      const run = await withDriver('within', () => 1.05, []);
      expect(run.code, run.stdout + run.stderr).toBe(EXIT.pass);
      const out = run.stdout;
      // demo-tiny taught the runtime (the driver's 5 % over its estimate with the 512 MiB prior) and is no check.
      expect(out).toMatch(/calibration: demo-tiny on GPU 2 NVIDIA GeForce RTX 4060 taught the daemon the embedded engine's runtime on a GPU: [\d.]+ MiB/);
      expect(out).not.toMatch(/^\s+gpu\s+demo-tiny/m);
      expect(out).toMatch(/^\s+gpu\s+demo-draft\s+GPU 2 NVIDIA GeForce RTX 4060: estimate .*\+(4\.9|5\.0|5\.1) %: ok$/m);
      expect(out).toMatch(/^\s+gpu\s+demo-chat\s+GPU 2 NVIDIA GeForce RTX 4060: estimate .*\+(4\.9|5\.0|5\.1) %: ok$/m);
      // node-llama-cpp takes no tensorSplit: the daemon never splits a model on the embedded engine, so there is no split to check.
      expect(out).toMatch(/^split: not checked: demo-chat runs on the embedded engine/m);
      expect(out).not.toMatch(/^\s+split\s+demo-chat/m);
      expect(out).toMatch(/^\s+partial\s+demo-chat\s+GPU \d NVIDIA GeForce RTX \d+: .*: ok$/m);
      expect(out).toMatch(/gpu-check: pass: all 3 checks within 10 %/);
      expect(out).not.toMatch(/^(## )?speed/m);
    }, 600_000);

    it('fails with a non-zero exit and a line naming the model and the GPU when one figure is off by more than 10 %', async () => {
      const run = await withDriver('beyond', (modelId) => (modelId === 'demo-draft' ? 1.3 : 1.05), ['--placements', 'gpu']);
      expect(run.code, run.stdout + run.stderr).toBe(EXIT.off);
      expect(run.stdout).toMatch(/^OFF: demo-draft on GPU 2 NVIDIA GeForce RTX 4060 \(gpu\): estimate [\d.]+ MiB, driver [\d.]+ MiB, \+(29\.\d|30\.\d) %: OFF by more than 10 %$/m);
      expect(run.stdout).toMatch(/^\s+gpu\s+demo-chat\s+GPU 2 .*: ok$/m);
      expect(run.stdout).toMatch(/gpu-check: 1 of 2 checks off by more than 10 %/);
    }, 600_000);

    // The speed phase where a GPU is found, stopped before any engine starts: a third contender
    // (LLMTRAY_EMBEDDED_ENTRY) that does not exist makes the race refuse to begin, and a
    // returning conversation with no time (LLMTRAY_RETURN_BUDGET_S 0) plans and starts nothing.
    const noEngine = (): Record<string, string> => ({ LLMTRAY_EMBEDDED_ENTRY: join(scratch, 'no-such-engine.js'), LLMTRAY_RETURN_BUDGET_S: '0' });

    it('with --only speed, checks no memory, enters the race, and claims nothing when the race cannot run (exit 2)', async () => {
      const run = await withDriver('only-speed', () => 1.05, ['--only', 'speed'], noEngine(), true);
      expect(run.code, run.stdout + run.stderr).toBe(EXIT.incomplete);
      expect(run.stdout).toMatch(/^speed: could not run: LLMTRAY_EMBEDDED_ENTRY names .*no-such-engine\.js, which does not exist; no speed figure is claimed$/m);
      expect(run.stdout).toContain('gpu-check: --only speed: no memory check was run; exit 2: a planned race did not run');
      expect(run.stdout).not.toMatch(/calibration|loading demo-/);
    }, 600_000);

    it('runs the returning conversation after the race, even one that could not start, saying what it planned and what it left out for want of time', async () => {
      const run = await withDriver('only-speed-return', () => 1.05, ['--only', 'speed'], noEngine(), true);
      const out = run.stdout;
      expect(out.indexOf('## speed: a returning conversation after a swap, every layer on the GPU (gpuLayers 999)')).toBeGreaterThan(out.indexOf('speed: could not run'));
      expect(out).toMatch(/^planned: demo-chat on embedded at ~1500 tokens; (demo-chat on llama-server at ~1500 tokens; )?llama-3\.2-1b Q8_0 on embedded at ~1500 and ~8000 tokens/m);
      expect(out).toMatch(/^return: demo-chat at ~8,000 tokens: not run: .* needs a context of 10,240, and the model was trained for 8,192$/m);
      expect(out).toMatch(/^return: demo-chat on embedded: not run: 0 s left of the time, and its 6 rounds would take about 48 s$/m);
      expect(out).toMatch(/^return: ran 0 of \d planned \(a model on an engine\); not started for want of time: demo-chat on embedded; .*llama-3\.2-1b Q8_0 on embedded/m);
      // Units it had no time to start are not failures: the exit is the race's.
      expect(out).toContain('gpu-check: --only speed: no memory check was run; exit 2: a planned race did not run');
      expect(out).not.toContain('a planned returning conversation did not run');
      expect(out).not.toMatch(/^### (embedded|llama-server): a returning conversation/m);
    }, 600_000);

    it('runs no returning conversation with --no-return', async () => {
      const run = await withDriver('only-speed-no-return', () => 1.05, ['--only', 'speed', '--no-return'], noEngine(), true);
      expect(run.code, run.stdout + run.stderr).toBe(EXIT.incomplete);
      expect(run.stdout).toContain('speed: could not run: LLMTRAY_EMBEDDED_ENTRY names');
      expect(run.stdout).not.toMatch(/^return|returning conversation/m);
    }, 600_000);

    it('runs the speed phase after the memory checks, and a race that cannot run leaves their exit code as it was', async () => {
      const run = await withDriver('speed-after', () => 1.05, ['--placements', 'gpu'], noEngine(), true);
      expect(run.code, run.stdout + run.stderr).toBe(EXIT.pass);
      const out = run.stdout;
      expect(out).toMatch(/gpu-check: pass: all 2 checks within 10 %/);
      expect(out.indexOf('speed: could not run: LLMTRAY_EMBEDDED_ENTRY names')).toBeGreaterThan(out.indexOf('gpu-check: pass'));
      expect(out.indexOf('return: ran 0 of')).toBeGreaterThan(out.indexOf('speed: could not run'));
      expect(out).toMatch(/^gpu-check: exit 0, the memory checks' verdict above \(the speed phase changes no exit code\)$/m);
    }, 600_000);
  });
});
