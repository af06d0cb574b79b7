// The idle daemon: what `llmtray serve` costs a workstation while no model is loaded, which is
// most of the time it runs. Targets (issue 14): RSS at most 100 MB after a minute idle, and CPU
// at most 0.2 % (no poll faster than 1 s while nothing loads).
//
// Measured on the real daemon as a person starts it (`serve --demo`: the demo loads nothing
// until asked), beside a bare Node process started at the same moment, whose RSS is the floor
// any Node program pays here. CPU counts the daemon and the children it waited for (the GPU
// tools it runs), from /proc: utime + stime + cutime + cstime, over a 30 s window after the minute.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

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

function serving(child: ChildProcess): Promise<void> {
  return new Promise((done, fail) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('llmtray is serving at')) done();
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
}
