// The `llmtray` CLI against a real `llmtray serve --demo`: each command is the built CLI run as
// a child process, as a person runs it, and what it prints is checked against what the
// daemon's own /api/state says.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVING_STATES } from '../../core/contracts/model-status.js';
import { formatBytes } from '../../core/contracts/format-bytes.js';
import type { Snapshot } from '../../core/contracts/snapshot.js';
import { isResident, isServing } from '../../core/contracts/model-status.js';
import { eventually, makeDataDir, removeDataDir, runCli, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

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

/** `text` for a RegExp, matched as written (a size's dot). */
const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

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

  it('`status` names the warm spare with its bytes, which are what "used" counts while no model is loaded', async () => {
    // The demo starts a spare engine a moment after it serves, and its figure is a measurement:
    // read the state, then the CLI, until both saw the same spare (a wait for what is expected).
    const status = await eventually(
      'status naming the warm spare /api/state holds',
      async () => {
        const spare = (await daemon.state()).budget.holders.find((h) => h.kind === 'spare');
        if (spare === undefined) return undefined;
        const text = (await cli('status')).stdout;
        return new RegExp(`^ {10}warm spare  ${escaped(formatBytes(spare.bytes))}  an engine with no model yet; the next launch adopts it$`, 'm').test(text) ? { text, spare } : undefined;
      },
      100_000,
    );
    expect(status.text).toContain('0 of 5 resident');
    expect(status.text).toContain(`memory    ${formatBytes(status.spare.bytes)} of `);
  }, 120_000);

  it('`logs` of a model never started says so instead of printing nothing; of an unknown one, names the models', async () => {
    const never = await cli('logs', 'demo-embed');
    expect(never.code).toBe(0);
    expect(never.stdout).toBe('');
    expect(never.stderr).toBe('no log yet: demo-embed has not started\n');
    const unknown = await cli('logs', 'no-such-model');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("Unknown model 'no-such-model'");
    expect(unknown.stderr).toContain('demo-chat, demo-draft, demo-embed, demo-tiny');
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

  it('`logs` prints the last 50 lines of the model server\'s log, `-n N` the last N, and says how many it left out', async () => {
    // demo-tiny is loaded and idle: its log does not grow while this reads it.
    const { lines } = (await (await daemon.api('/api/models/demo-tiny/logs')).json()) as { lines: string[] };
    expect(lines.join('\n')).toContain("starting 'demo-tiny'");
    expect(lines.length).toBeGreaterThan(50);
    const tail = await cli('logs', 'demo-tiny');
    expect(tail.code).toBe(0);
    expect(tail.stdout).toBe(lines.slice(-50).map((line) => `${line}\n`).join(''));
    expect(tail.stderr).toContain(`(the last 50 of ${lines.length} lines; llmtray logs -n N demo-tiny for more, -f to follow)`);

    const three = await cli('logs', '-n', '3', 'tiny');
    expect(three.code).toBe(0);
    expect(three.stdout.split('\n').slice(0, -1)).toEqual(lines.slice(-3));
    const all = await cli('logs', '-n', String(lines.length), 'demo-tiny');
    expect(all.stdout).toContain("starting 'demo-tiny'");
    expect(all.stderr).toBe('');

    const wrong = await cli('logs', '-n', 'many', 'demo-tiny');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("-n: expected a number of lines (0 or more), got 'many'");
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
    // `load` made it ready a moment ago: pinning keeps it, and says it is loaded rather than that it loads now.
    expect(pin.stdout.trim()).toBe('demo-tiny pinned: it is loaded and stays resident');
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
    expect((await daemon.model('demo-tiny')).pinned).toBe(false);
    // It was loaded by `load` a moment ago: its use keeps it for its idle time, and the reply says so.
    expect(unpin.stdout.trim()).toBe('demo-tiny unpinned: it stays while used and is evicted once unused for 600 s');
    expect(isServing((await daemon.model('demo-tiny')).status.state)).toBe(true);

    // Nothing failed: a retry has nothing to forget, and says so instead of "recovery starts over".
    const retry = await cli('retry', 'demo-tiny');
    expect(retry.code).toBe(0);
    expect(retry.stdout.trim()).toBe('demo-tiny has not failed: nothing needed retrying');
  });

  it('`load` of a model that cannot fit exits 1 at once with the reason, instead of waiting', async () => {
    expect((await cli('pin', 'demo-tiny')).code).toBe(0);
    // demo-chat with its draft needs nearly the whole demo budget; the pinned demo-tiny holds part of it.
    const result = await cli('load', 'chat', '--timeout', '50');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('demo-chat does not fit');
    expect(result.stderr).toContain('pinned demo-tiny');

    // It never loaded: the reply says so, not "demo-chat unloads now".
    const unload = await cli('unload', 'chat');
    expect(unload.code).toBe(0);
    expect(unload.stdout).toMatch(/^demo-chat was not loaded/);
    expect((await cli('unpin', 'demo-tiny')).code).toBe(0);
  });

  it('a draft in its target\'s engine shows as drafting, its bytes on a memory line of its own; unpinning a model nobody used evicts it, as the reply says', async () => {
    // Pinned, never used: once unpinned nothing keeps demo-chat (issue 35 saw "it may be evicted when idle", then the eviction half a second later).
    expect((await cli('unload', 'demo-tiny')).stdout.trim()).toBe('demo-tiny unloads now');
    expect((await cli('pin', 'demo-chat')).code).toBe(0);
    await eventually(
      'demo-chat serving with its draft counted',
      async () => {
        const snapshot = await daemon.state();
        const chat = snapshot.models.find((m) => m.id === 'demo-chat');
        const draftHeld = snapshot.budget.holders.some((h) => h.kind === 'draft' && h.modelId === 'demo-draft');
        return chat !== undefined && isServing(chat.status.state) && draftHeld ? true : undefined;
      },
      100_000,
    );
    // The bytes are the engine's measured figure, split by the draft's share: read the state, then the CLI, until both saw the same.
    const status = await eventually(
      'status showing the draft as /api/state counts it',
      async () => {
        const draftHolder = (await daemon.state()).budget.holders.find((h) => h.kind === 'draft' && h.modelId === 'demo-draft');
        if (draftHolder === undefined) return undefined;
        const result = await cli('status');
        const line = new RegExp(`^ {10}demo-draft\\s+${escaped(formatBytes(draftHolder.bytes))}\\s+draft of demo-chat, in its engine$`, 'm');
        return line.test(result.stdout) ? { stdout: result.stdout, draftBytes: draftHolder.bytes } : undefined;
      },
      100_000,
    );
    expect(statesInTable(status.stdout)['demo-draft']).toBe('drafting');
    expect(status.stdout).toMatch(new RegExp(`^demo-draft\\s+drafting\\s+${escaped(formatBytes(status.draftBytes))}\\s+for demo-chat, in its engine$`, 'm'));
    expect(status.stdout).toMatch(/^ {10}demo-chat\s+\d/m);

    const unpin = await cli('unpin', 'demo-chat');
    expect(unpin.code).toBe(0);
    expect(unpin.stdout.trim()).toBe('demo-chat unpinned: nothing has used it within its idle time (600 s), so it is being evicted now');
    // And it is: what the reply said is what the daemon does.
    await eventually('demo-chat evicted', async () => (isResident((await daemon.model('demo-chat')).status.state) ? undefined : true), 100_000);
    const gone = await cli('unload', 'demo-chat');
    expect(gone.stdout.trim()).toBe('demo-chat was not loaded: nothing to unload');
    expect(statesInTable((await cli('status')).stdout)['demo-draft']).toBe('idle');
  }, 240_000);

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

describe('llmtray serve on a machine with no models and no config', () => {
  it('prints where to put GGUF files and how to try the demo, and says the config file it names does not exist', async () => {
    const home = await makeDataDir();
    const missing = join(home, 'config', 'llmtray', 'config.yaml');
    // A fresh home: every default model folder is under it, and empty.
    const own = await startDaemonProcess({
      config: missing,
      env: { HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_CACHE_HOME: join(home, 'cache'), HF_HUB_CACHE: join(home, 'hf'), LLAMA_CACHE: join(home, 'llama') },
    });
    try {
      const printed = await own.untilStdout('Press Ctrl-C', 100_000);
      expect(printed).toContain(`  config:     no config file at ${missing}; using the defaults\n`);
      expect(printed).toContain(`No models yet. Put GGUF files in one of these folders (picked up while llmtray runs):\n  ${join(home, 'models')}\n`);
      expect(printed).toContain(`or list them in ${missing}\n`);
      expect(printed).toContain('To try llmtray with small generated models: llmtray serve --demo');
      expect((await own.state()).models).toEqual([]);
    } finally {
      await own.stop();
      await removeDataDir(own.dataDir);
      await removeDataDir(home);
    }
  }, 120_000);

  it('prints the config file it read without the hint when models are served', () => {
    expect(daemon.stdout()).toContain(`  config:     ${join(daemon.dataDir, 'demo', 'config.yaml')}\n`);
    expect(daemon.stdout()).not.toContain('No models yet');
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
