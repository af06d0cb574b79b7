// The daemon survives its outputs (issue 22): `llmtray serve | tee log` whose reader goes
// away, and `serve 2>> llmtray.log` on a disk that is full. Both used to end the daemon at its
// next log line (`write EPIPE`, `ENOSPC`), and every app lost its endpoint. Caused for real:
// the test closes the read ends of the daemon's pipes, or runs it with stderr on /dev/full
// (every write fails with ENOSPC, as on a full disk), then makes it log by loading a model.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, isProcessAlive, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let daemon: DaemonProcess | undefined;

afterEach(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  daemon = undefined;
});

/** A chat that loads demo-tiny: the load writes a dozen lines to the daemon's log. */
async function chatThroughLoad(d: DaemonProcess): Promise<string> {
  const client = new OpenAI({ baseURL: d.endpoint, apiKey: 'unused', maxRetries: 0 });
  const answer = await client.chat.completions.create({ model: 'demo-tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
  return answer.choices[0]?.message.content ?? '';
}

describe('the daemon survives its outputs', () => {
  it('serves on when the reader of its stdout and stderr pipes goes away, and says so', async () => {
    daemon = await startDaemonProcess();
    await daemon.untilStdout('Press Ctrl-C');
    // What `tee` exiting does: the read ends close; the daemon's next write gets EPIPE.
    daemon.child.stdout?.destroy();
    daemon.child.stderr?.destroy();
    expect((await chatThroughLoad(daemon)).length).toBeGreaterThan(0);
    const d = daemon;
    const lost = await eventually('stderr reported lost', async () => {
      const state = await d.state();
      return state.lostOutputs.find((l) => l.stream === 'stderr');
    });
    expect(lost.code).toBe('EPIPE');
    // Still serving after the loss was seen, and the model's own log is kept in memory.
    expect((await chatThroughLoad(daemon)).length).toBeGreaterThan(0);
    const logs = (await (await daemon.api('/api/models/demo-tiny/logs')).json()) as { lines: string[] };
    expect(logs.lines.length).toBeGreaterThan(0);
    expect(isProcessAlive(daemon.pid)).toBe(true);
  });

  it('serves on when its stderr is a file on a full disk', async () => {
    // exec keeps the daemon's pid (daemon.json is recognised by it); /dev/full fails every write with ENOSPC.
    daemon = await startDaemonProcess({ launcher: ['sh', '-c', 'exec "$@" 2>/dev/full', 'sh'] });
    expect((await chatThroughLoad(daemon)).length).toBeGreaterThan(0);
    const state = await daemon.state();
    expect(state.lostOutputs.map((l) => [l.stream, l.code])).toEqual([['stderr', 'ENOSPC']]);
    expect(isProcessAlive(daemon.pid)).toBe(true);
  });
});
