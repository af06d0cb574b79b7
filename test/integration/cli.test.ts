// The `llmtray` CLI against a real `llmtray serve --demo`: each command is the built CLI run as
// a child process, as a person runs it, and what it prints is checked against what the
// daemon's own /api/state says.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVING_STATES } from '../../core/contracts/model-status.js';
import type { Snapshot } from '../../core/contracts/snapshot.js';
import { makeDataDir, removeDataDir, runCli, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let daemon: DaemonProcess;
const cli = (...args: string[]) => runCli([...args, '--data-dir', daemon.dataDir]);

beforeAll(async () => {
  daemon = await startDaemonProcess();
});

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
});

/** The STATE column of `llmtray status`, by model id. */
function statesInTable(text: string): Record<string, string> {
  const lines = text.split('\n');
  const header = lines.findIndex((line) => line.startsWith('MODEL'));
  const states: Record<string, string> = {};
  for (const line of lines.slice(header + 1)) {
    const [id, state] = line.trim().split(/\s+/);
    if (id !== undefined && state !== undefined && id.startsWith('demo-')) states[id] = state;
  }
  return states;
}

const statesOf = (snapshot: Snapshot) => Object.fromEntries(snapshot.models.map((m) => [m.id, m.status.state]));

describe('llmtray CLI against a running daemon', () => {
  it('`status` and `status --json` show what /api/state says', async () => {
    const human = await cli('status');
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`endpoint  ${daemon.endpoint}`);
    const expected = statesOf(await daemon.state());
    expect(Object.keys(expected)).toHaveLength(5);
    expect(statesInTable(human.stdout)).toEqual(expected);

    const json = await cli('status', '--json');
    expect(json.code).toBe(0);
    const snapshot = JSON.parse(json.stdout) as Snapshot;
    expect(statesOf(snapshot)).toEqual(expected);
    expect(snapshot.endpoint).toBe(daemon.endpoint);
  });

  it('`load` prints progress and exits 0 once the model is ready, and `status` then says so', async () => {
    const result = await cli('load', 'tiny');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('demo-tiny requested');
    expect(result.stdout).toMatch(/demo-tiny: (loading|queued)/);
    expect(result.stdout).toContain('demo-tiny is ready');

    const tiny = await daemon.model('demo-tiny');
    expect(SERVING_STATES).toContain(tiny.status.state);
    const status = await cli('status');
    expect(statesInTable(status.stdout)['demo-tiny']).toBe(tiny.status.state);
    const json = JSON.parse((await cli('status', '--json')).stdout) as Snapshot;
    expect(statesOf(json)).toEqual(statesOf(await daemon.state()));
  });

  it('`logs` prints the model server\'s log lines', async () => {
    const result = await cli('logs', 'demo-tiny');
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines.length).toBeGreaterThan(1);
    expect(result.stdout).toContain("starting 'demo-tiny'");
  });

  it('no engine key leaves the router: not in the snapshot, the events, /metrics, the CLI or the logs', async () => {
    expect((await daemon.model('demo-tiny')).upstream?.pid).toBeGreaterThan(0);
    const keys = await daemon.engineKeys();
    expect(keys.length).toBeGreaterThan(0);
    const events = await daemon.api('/api/events');
    const reader = events.body!.getReader();
    const firstEvent = new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    const outputs = [
      await (await daemon.api('/api/state')).text(),
      firstEvent,
      await (await fetch(`${daemon.origin}/metrics`)).text(),
      (await cli('status', '--json')).stdout,
      (await cli('models', '--json')).stdout,
      (await cli('logs', 'demo-tiny')).stdout,
      daemon.stderr(),
    ];
    expect(firstEvent).toContain('SnapshotUpdated');
    for (const output of outputs) for (const key of keys) expect(output).not.toContain(key);
  });

  it('`pin`, `unpin` and `retry` print the daemon\'s sentence and exit 0', async () => {
    const pin = await cli('pin', 'demo-tiny');
    expect(pin.code).toBe(0);
    expect(pin.stdout.trim()).toBe('demo-tiny pinned: it loads now and stays resident');
    expect((await daemon.model('demo-tiny')).pinned).toBe(true);

    const again = await cli('pin', 'tiny');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('demo-tiny was already pinned');
    // The router accepts `Demo-Tiny` as a model name; so does every command.
    const cased = await cli('pin', 'Demo-Tiny');
    expect(cased.code).toBe(0);
    expect(cased.stdout).toContain('demo-tiny was already pinned');

    const unpin = await cli('unpin', 'demo-tiny');
    expect(unpin.code).toBe(0);
    expect(unpin.stdout).toContain('demo-tiny unpinned');
    expect((await daemon.model('demo-tiny')).pinned).toBe(false);

    const retry = await cli('retry', 'demo-tiny');
    expect(retry.code).toBe(0);
    expect(retry.stdout).toContain('demo-tiny: recovery starts over');
  });

  it('`load` of a model that cannot fit exits 1 at once with the reason, instead of waiting', async () => {
    expect((await cli('pin', 'demo-tiny')).code).toBe(0);
    // demo-chat with its draft needs nearly the whole demo budget; the pinned demo-tiny holds part of it.
    const result = await cli('load', 'chat', '--timeout', '50');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('demo-chat does not fit');
    expect(result.stderr).toContain('pinned demo-tiny');

    const unload = await cli('unload', 'chat');
    expect(unload.code).toBe(0);
    expect(unload.stdout).toContain('demo-chat unloads now');
    expect((await cli('unpin', 'demo-tiny')).code).toBe(0);
  });

  it('a command for a model that does not exist exits 1 naming the models', async () => {
    const result = await cli('pin', 'no-such-model');
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).toContain("Unknown model 'no-such-model'");
    expect(result.stdout + result.stderr).toContain('demo-chat');
  });

  it('an unknown command exits 2 with the usage', async () => {
    const result = await cli('frobnicate');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown command 'frobnicate'");
    expect(result.stderr).toContain('Usage:');
  });
});

describe('llmtray CLI without a daemon', () => {
  it('exits 1 saying no daemon is running, and 2 for a usage mistake even then', async () => {
    const empty = await makeDataDir();
    try {
      const status = await runCli(['status', '--data-dir', empty]);
      expect(status.code).toBe(1);
      expect(status.stderr).toContain('no llmtray daemon is running');

      const typo = await runCli(['stauts', '--data-dir', empty]);
      expect(typo.code).toBe(2);
      expect(typo.stderr).toContain('Usage:');
      const noModel = await runCli(['pin', '--data-dir', empty]);
      expect(noModel.code).toBe(2);
      expect(noModel.stderr).toContain('which model?');
    } finally {
      await removeDataDir(empty);
    }
  });

  it('says no daemon is running when daemon.json was left by one that is gone', async () => {
    const dir = await makeDataDir();
    try {
      const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
      writeFileSync(join(dir, 'daemon.json'), JSON.stringify({ pid: Number(gone.stdout), port: 9, endpoint: 'http://127.0.0.1:9/v1', origin: 'http://127.0.0.1:9', startedAt: 0 }));
      writeFileSync(join(dir, 'admin-token'), 'a'.repeat(64));
      const status = await runCli(['status', '--data-dir', dir]);
      expect(status.code).toBe(1);
      expect(status.stderr).toContain('no llmtray daemon is running');
      expect(status.stderr).toContain(`pid ${gone.stdout}`);
    } finally {
      await removeDataDir(dir);
    }
  });
});

describe('llmtray serve', () => {
  it('`serve` on a port that is taken exits 1 saying so and how to choose another, leaving nothing behind', async () => {
    const dir = await makeDataDir();
    try {
      const result = await runCli(['serve', '--demo', '--data-dir', dir, '--port', String(daemon.port)]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`port ${daemon.port} on 127.0.0.1 is already in use`);
      expect(result.stderr).toContain('--port N');
      // It released its own lock and wrote no daemon record, so a corrected start just works.
      expect(existsSync(join(dir, 'daemon.lock'))).toBe(false);
      expect(existsSync(join(dir, 'daemon.json'))).toBe(false);
    } finally {
      await removeDataDir(dir);
    }
  });
});

describe('the admin token deleted while the daemon runs', () => {
  // Before: "has never run … start it", and then `serve` refused because it runs: a circle.
  it('the CLI says the daemon runs but its token file is gone, and to restart it', async () => {
    const own = await startDaemonProcess();
    try {
      rmSync(join(own.dataDir, 'admin-token'));
      const status = await runCli(['status', '--data-dir', own.dataDir]);
      expect(status.code).toBe(1);
      expect(status.stderr).toContain(`runs (pid ${own.pid}) but its token file ${join(own.dataDir, 'admin-token')} is gone`);
      expect(status.stderr).toContain('Restart it');
      expect(status.stderr).not.toContain('never run');

      // What it says to do works: a restart writes a new token and the CLI reaches the daemon.
      await own.stop();
      const restarted = await startDaemonProcess({ dataDir: own.dataDir });
      try {
        const again = await runCli(['status', '--data-dir', own.dataDir]);
        expect(again.code, again.stderr).toBe(0);
      } finally {
        await restarted.stop();
      }
    } finally {
      await own.stop();
      await removeDataDir(own.dataDir);
    }
  }, 120_000);
});
