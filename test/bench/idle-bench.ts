// The idle daemon: what `llmtray serve` costs a workstation while no model is loaded, which is
// most of the time it runs. Targets (issue 14): RSS at most 100 MB after a minute idle, and CPU
// at most 0.2 % (no poll faster than 1 s while nothing loads).
//
// Measured on the real daemon as a person starts it (`serve --demo`: the demo loads nothing
// until asked), beside a bare Node process started at the same moment, whose RSS is the floor
// any Node program pays here. CPU counts the daemon and the children it waited for (the GPU
// tools it runs), from /proc: utime + stime + cutime + cstime, over a 30 s window after the minute.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { treeResidentBytes } from '../../core/engine/supervisor/process-tree.js';
import { llamaServerPath, machineLoad, waitForQuietIfAsked } from './bench-env.js';
import { chosenRealShapes, realShapeModel } from './real-shape/real-shape-models.js';
import type { EngineKind } from '../../core/contracts/snapshot.js';

const CLI = resolve(import.meta.dirname, '..', '..', 'core', 'cli.js');
const IDLE_MS = 60_000;
const CPU_WINDOW_MS = 30_000;
const TICKS_PER_SECOND = 100; // Linux's USER_HZ

async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kib) * 1024;
}

async function cpuTicks(pid: number): Promise<number> {
  // Fields after the command's closing parenthesis: utime is the 14th field of the line.
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
}

/** The daemon's children, split into model servers and its warm spare (an engine with no model, `--spare`). */
async function childrenOf(pid: number): Promise<{ servers: number[]; spares: number[] }> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  const pids = text.trim() === '' ? [] : text.trim().split(/\s+/).map(Number);
  const spares: number[] = [];
  const servers: number[] = [];
  for (const child of pids) {
    const argv = (await readFile(`/proc/${child}/cmdline`, 'utf8').catch(() => '')).split('\0');
    (argv.includes('--spare') ? spares : servers).push(child);
  }
  return { servers, spares };
}

/** Resolves with the endpoint (".../v1") once the daemon says it is serving. */
function serving(child: ChildProcess): Promise<string> {
  return new Promise((done, fail) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const endpoint = /llmtray is serving at (\S+)/.exec(out)?.[1];
      if (endpoint !== undefined) done(endpoint);
    });
    child.once('exit', (code) => fail(new Error(`the daemon exited (${code}) before serving: ${out}`)));
  });
}

const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;

export async function runIdleBench(): Promise<void> {
  console.log(`idle daemon: no model loaded, RSS after ${IDLE_MS / 1000} s and CPU over the next ${CPU_WINDOW_MS / 1000} s (targets: 100 MB, 0.2 %)`);
  const dataDir = await mkdtemp(join(tmpdir(), 'llmtray-idle-bench-'));
  const daemon = spawn(process.execPath, [CLI, 'serve', '--demo', '--data-dir', dataDir, '--port', '0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const bare = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  try {
    await serving(daemon);
    await new Promise((done) => setTimeout(done, IDLE_MS));
    const pid = daemon.pid as number;
    const { servers, spares } = await childrenOf(pid);
    if (servers.length > 0) throw new Error(`the daemon has ${servers.length} model server(s) after a minute: a model is loaded, so it is not idle`);
    const [daemonRss, bareRss] = await Promise.all([rssBytes(pid), rssBytes(bare.pid as number)]);
    // The warm spare is its own process, budgeted and shown on the memory picture like a model,
    // and turned off with engines.warmSpare: false; what it costs is told apart from the daemon.
    const spareRss = (await Promise.all(spares.map(rssBytes))).reduce((a, b) => a + b, 0);
    const before = await cpuTicks(pid);
    await new Promise((done) => setTimeout(done, CPU_WINDOW_MS));
    const cpuPercent = (((await cpuTicks(pid)) - before) / TICKS_PER_SECOND / (CPU_WINDOW_MS / 1000)) * 100;
    console.log(`  daemon RSS     ${mb(daemonRss).padStart(9)}   ${daemonRss <= 100e6 ? 'met' : 'missed'}`);
    console.log(`  bare Node RSS  ${mb(bareRss).padStart(9)}   (the floor: the daemon's own part is ${mb(daemonRss - bareRss)})`);
    console.log(`  daemon CPU     ${cpuPercent.toFixed(2).padStart(7)} %   ${cpuPercent <= 0.2 ? 'met' : 'missed'}`);
    console.log(
      spares.length === 0
        ? '  warm spare     none running'
        : `  warm spare RSS ${mb(spareRss).padStart(9)}   (its own process, an engine with its runtime and no model: engines.warmSpare: false turns it off)`,
    );
  } finally {
    bare.kill('SIGKILL');
    daemon.kill('SIGINT');
    await new Promise((done) => daemon.once('exit', done));
    await rm(dataDir, { recursive: true, force: true });
  }
  console.log();
  await realShapeIdle();
}

/**
 * The idle daemon with a real-shape model resident (issue 41): the first model
 * LLMTRAY_REAL_SHAPES chooses (llama-3.2-1b Q4_K_M unless it names others), pinned, loaded by
 * one request, then left alone for a minute: the daemon's own RSS and CPU as above, and beside
 * them the engine's (its process tree's RSS; its CPU from /proc over the same window), on each
 * engine where it applies (llama-server where one is found). None with LLMTRAY_REAL_SHAPES=none.
 */
async function realShapeIdle(): Promise<void> {
  const first = chosenRealShapes()[0];
  if (first === undefined) return;
  const model = await realShapeModel(first.shape, first.quant);
  const server = llamaServerPath();
  const engines: EngineKind[] = server === null ? ['embedded'] : ['embedded', 'llama-server'];
  for (const engine of engines) {
    await waitForQuietIfAsked();
    const loadBefore = machineLoad().label;
    const dataDir = await mkdtemp(join(tmpdir(), 'llmtray-idle-bench-'));
    const configPath = join(dataDir, 'config.yaml');
    await writeFile(
      configPath,
      `modelDirs: []\nbudget:\n  reserve: 0\nengines:\n${server === null ? '' : `  llamaServer: ${JSON.stringify(server)}\n`}models:\n  - id: resident\n    path: ${JSON.stringify(model.path)}\n    ctx: 2048\n    gpuLayers: 0\n    engine: ${engine}\n    pinned: true\n`,
    );
    const daemon = spawn(process.execPath, [CLI, 'serve', '--config', configPath, '--data-dir', dataDir, '--port', '0'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const endpoint = await serving(daemon);
      // Pinned keeps it resident; one short request makes sure it is loaded and has served.
      const res = await fetch(`${endpoint}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'resident', messages: [{ role: 'user', content: 'Name a colour.' }], max_tokens: 1, temperature: 0 }),
      });
      if (!res.ok) throw new Error(`the request that loads ${model.label} answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
      await new Promise((done) => setTimeout(done, IDLE_MS));
      const pid = daemon.pid as number;
      // The engine by engines.json, not by its argv: an adopted warm spare keeps the `--spare` it was started with.
      const records = (JSON.parse(await readFile(join(dataDir, 'engines.json'), 'utf8')) as { engines: { modelId: string; pid: number }[] }).engines;
      const enginePid = records.find((r) => r.modelId === 'resident')?.pid;
      if (enginePid === undefined) throw new Error(`no engine for ${model.label} in engines.json after a minute: ${JSON.stringify(records)}`);
      const children = await childrenOf(pid);
      const spares = [...children.servers, ...children.spares].filter((child) => child !== enginePid);
      const [daemonRss, engineRss] = await Promise.all([rssBytes(pid), treeResidentBytes(enginePid)]);
      const spareRss = (await Promise.all(spares.map(rssBytes))).reduce((a, b) => a + b, 0);
      const [daemonBefore, engineBefore] = await Promise.all([cpuTicks(pid), cpuTicks(enginePid)]);
      await new Promise((done) => setTimeout(done, CPU_WINDOW_MS));
      const percent = (ticks: number) => ((ticks / TICKS_PER_SECOND) / (CPU_WINDOW_MS / 1000)) * 100;
      const daemonCpu = percent((await cpuTicks(pid)) - daemonBefore);
      const engineCpuPercent = percent((await cpuTicks(enginePid)) - engineBefore);
      console.log(`### idle daemon with ${model.label} resident on the ${engine} engine (${loadBefore} before, ${machineLoad().label} after): RSS after ${IDLE_MS / 1000} s, CPU over the next ${CPU_WINDOW_MS / 1000} s`);
      console.log(`  daemon RSS     ${mb(daemonRss).padStart(9)}   ${daemonRss <= 100e6 ? 'met' : 'missed'} (target 100 MB: the daemon's own process, the model not in it)`);
      console.log(`  daemon CPU     ${daemonCpu.toFixed(2).padStart(7)} %   ${daemonCpu <= 0.2 ? 'met' : 'missed'} (target 0.2 %)`);
      console.log(`  engine RSS     ${mb(engineRss).padStart(9)}   (${engine}, pid ${enginePid}, its process tree: the model's weights as touched, KV cache, compute, runtime)`);
      console.log(`  engine CPU     ${engineCpuPercent.toFixed(2).padStart(7)} %   (${engine} holding the model with no request)`);
      console.log(spares.length === 0 ? '  warm spare     none running' : `  warm spare RSS ${mb(spareRss).padStart(9)}   (its own process, an engine with its runtime and no model)`);
      console.log();
    } finally {
      daemon.kill('SIGINT');
      await new Promise((done) => daemon.once('exit', done));
      await rm(dataDir, { recursive: true, force: true });
    }
  }
}
