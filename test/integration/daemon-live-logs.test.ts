// Live logs end to end: the real daemon (`llmtray serve --demo` as a child), its real embedded
// engines printing llama.cpp's own lines, the admin event stream read over real HTTP/SSE on
// loopback, and `llmtray logs -f` run as a child process the way a person runs it.
//
// One daemon for the file; the tests run in order: demo-tiny loads while the stream is read →
// its engine is signalled and the line it writes is timed → `logs -f` follows a fresh load →
// the daemon stops under a follower.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminEvent } from '../../core/contracts/admin-events.js';
import type { ModelLogsResponse } from '../../core/contracts/commands.js';
import { readEventStream } from '../../core/admin-client/event-stream-reader.js';
import { CLI_ENTRY, eventually, runCli, type DaemonExit, type DaemonProcess } from '../support/daemon-process.js';
import { fileDaemon } from '../support/file-daemon.js';

type LogAppended = Extract<AdminEvent, { type: 'LogAppended' }>;

const live = fileDaemon();

let stream: EventStream;

beforeAll(async () => {
  stream = await openEvents(live.daemon);
});

afterAll(async () => {
  stream?.close();
});

interface EventStream {
  /** Every LogAppended so far, with when it arrived (performance.now()). */
  batches: { event: LogAppended; at: number }[];
  close(): void;
}

/** Reads /api/events from its first event on; resolves once the stream is live (its snapshot came). */
async function openEvents(target: DaemonProcess): Promise<EventStream> {
  const abort = new AbortController();
  const res = await target.api('/api/events', { signal: abort.signal, headers: { accept: 'text/event-stream' } });
  if (!res.ok || res.body === null) throw new Error(`/api/events answered ${res.status}`);
  const batches: EventStream['batches'] = [];
  let live: () => void = () => {};
  const isLive = new Promise<void>((resolve) => (live = resolve));
  void readEventStream(res.body, (message) => {
    const event = JSON.parse(message.data) as AdminEvent;
    if (event.type === 'SnapshotUpdated') live();
    if (event.type === 'LogAppended') batches.push({ event, at: performance.now() });
  }).catch(() => undefined);
  await isLive;
  return { batches, close: () => abort.abort() };
}

/** A model's lines as the stream delivered them, by position. */
function linesByPosition(modelId: string): Map<number, string> {
  const byPosition = new Map<number, string>();
  for (const { event } of stream.batches) {
    if (event.modelId !== modelId) continue;
    event.lines.forEach((line, i) => byPosition.set(event.first + i, line));
  }
  return byPosition;
}

async function logTail(modelId: string): Promise<ModelLogsResponse> {
  return (await (await live.daemon.api(`/api/models/${modelId}/logs`)).json()) as ModelLogsResponse;
}

async function command(verb: string, modelId: string): Promise<void> {
  const res = await live.daemon.api(`/api/models/${modelId}/${verb}`, { method: 'POST' });
  expect(res.status, await res.clone().text()).toBe(200);
}

const LLAMA_CPP_LINE = /^(llama_model_loader|load_tensors|print_info|llama_context|llama_kv_cache)\b/;

describe('the admin event stream', () => {
  it("carries llama.cpp's lines of a load as the engine writes them, numbered as the daemon's own log", async () => {
    await command('load', 'demo-tiny');
    await eventually('demo-tiny is ready', async () => (['ready', 'active'].includes((await live.daemon.model('demo-tiny')).status.state) ? true : undefined));
    await eventually('the stream carried the line that made it ready', async () =>
      [...linesByPosition('demo-tiny').values()].some((line) => line.includes('model loaded')) ? true : undefined,
    );
    const streamed = linesByPosition('demo-tiny');
    expect([...streamed.values()].filter((line) => LLAMA_CPP_LINE.test(line)).length).toBeGreaterThan(5);

    // Every line the stream carried is the daemon's line at that position: nothing shifted,
    // nothing left out (a load's lines fit the feed's burst), in the order they were written.
    const tail = await logTail('demo-tiny');
    const tailStart = tail.next - tail.lines.length;
    const positions = [...streamed.keys()].sort((a, b) => a - b);
    expect(positions).toEqual(positions.map((_, i) => positions[0]! + i));
    for (const position of positions) expect(streamed.get(position), `line ${position}`).toBe(tail.lines[position - tailStart]);
    expect(positions.at(-1)! + 1).toBeLessThanOrEqual(tail.next);
  });

  it('delivers a line within a second of the engine writing it', async () => {
    const engine = (await live.daemon.model('demo-tiny')).upstream;
    expect(engine).not.toBeNull();
    const from = stream.batches.length;
    // The embedded engine writes "operator(): SIGTERM received" the moment the signal lands
    // (llama-server's wording), so the time from the kill is an upper bound on write → event.
    const killedAt = performance.now();
    process.kill(engine!.pid, 'SIGTERM');
    const arrived = await eventually('the engine\'s SIGTERM line came over the stream', async () =>
      stream.batches.slice(from).find(({ event }) => event.modelId === 'demo-tiny' && event.lines.some((l) => l.includes('SIGTERM received'))),
    );
    // The contract is one second. The feed holds a line at most 250 ms; the rest is the engine,
    // the daemon and this test being scheduled on two loaded cores, which the bound leaves
    // 750 ms for. A feed that batched per second, or a stream that waited for the next
    // snapshot, would not make it.
    expect(arrived.at - killedAt).toBeLessThan(1_000);
  });
});

describe('llmtray logs -f', () => {
  let follower: Follower | null = null;
  afterAll(() => follower?.child.kill('SIGKILL'));

  it('prints the tail, then every line of a new load once, in order, and exits 0 on Ctrl-C', async () => {
    await command('unload', 'demo-tiny');
    await eventually('demo-tiny is gone', async () => ((await live.daemon.model('demo-tiny')).upstream === null ? true : undefined));
    const before = await logTail('demo-tiny');
    // -n with the whole log: -f prints the last 50 lines by default, and this checks every line.
    follower = follow('demo-tiny', ['-n', String(before.lines.length)]);
    await eventually('the tail is printed', async () => (follower!.lines().length >= before.lines.length ? true : undefined));
    expect(follower.lines().slice(0, before.lines.length)).toEqual(before.lines);

    await command('load', 'demo-tiny');
    await eventually('demo-tiny is ready', async () => (['ready', 'active'].includes((await live.daemon.model('demo-tiny')).status.state) ? true : undefined));
    // What it printed is the daemon's log, line for line: the tail and then the live lines,
    // with no line twice and none missing (the ring of 2000 has not dropped any here).
    const after = await eventually('every line of the load is printed', async () => {
      const tail = await logTail('demo-tiny');
      return follower!.lines().length >= tail.lines.length && tail.lines.some((l) => l.includes('model loaded')) ? tail : undefined;
    });
    expect(after.next).toBe(after.lines.length);
    expect(follower.lines()).toEqual(after.lines);
    expect(follower.lines().slice(before.lines.length).some((line) => LLAMA_CPP_LINE.test(line))).toBe(true);

    follower.child.kill('SIGINT');
    const exit = await follower.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(follower.stderr()).toBe('');
  });

  it('refuses an unknown model with the daemon\'s sentence, and -f anywhere but `logs` as a usage mistake', async () => {
    const unknown = await runCli(['logs', '-f', 'nope', '--data-dir', live.daemon.dataDir]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("Unknown model 'nope'; the models are: demo-broken, demo-chat, demo-draft, demo-embed, demo-tiny.");
    const misplaced = await runCli(['status', '-f', '--data-dir', live.daemon.dataDir]);
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toContain('-f follows a log or the requests: llmtray logs -f ID, llmtray activity -f');
  });

  it('prints only the last 50 lines of the tail by default, then follows', async () => {
    const tail = await logTail('demo-tiny');
    expect(tail.lines.length).toBeGreaterThan(50);
    follower = follow('tiny');
    await eventually('the tail is printed', async () => (follower!.lines().length >= 50 ? true : undefined));
    expect(follower.lines().slice(0, 50)).toEqual(tail.lines.slice(-50));
    follower.child.kill('SIGINT');
    expect(await follower.exited).toEqual({ code: 0, signal: null });
  });

  it('says a model never started has no log yet, and follows it all the same', async () => {
    follower = follow('demo-embed');
    await eventually('the no-log line', async () => (follower!.stderr().includes('\n') ? true : undefined));
    expect(follower.stderr()).toBe('no log yet: demo-embed has not started; following: its lines appear here once it starts\n');
    expect(follower.lines()).toEqual([]);
    follower.child.kill('SIGINT');
    expect(await follower.exited).toEqual({ code: 0, signal: null });
  });

  it('says so and exits 1 when the daemon stops under it', async () => {
    follower = follow('tiny');
    await eventually('the tail is printed', async () => (follower!.lines().length > 0 ? true : undefined));
    await live.daemon.stop();
    const exit = await follower.exited;
    expect(exit.code).toBe(1);
    expect(follower.stderr()).toBe("llmtray: the daemon's event stream ended (the daemon stopped); no more lines.\n");
  });
});

interface Follower {
  child: ChildProcess;
  /** The complete lines it printed so far. */
  lines(): string[];
  stderr(): string;
  exited: Promise<DaemonExit>;
}

function follow(model: string, args: readonly string[] = []): Follower {
  const child = spawn(process.execPath, [CLI_ENTRY, 'logs', '-f', ...args, model, '--data-dir', live.daemon.dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr?.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const exited = new Promise<DaemonExit>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  return {
    child,
    lines: () => stdout.split('\n').slice(0, -1),
    stderr: () => stderr,
    exited,
  };
}
