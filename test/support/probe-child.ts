// The probe and live budget of test/fixtures/fake-gpu/live-budget-child.mjs, driven from a test:
// one command a line in, one JSON message a line out.
//
// Why a child process: systeminformation copies process.env when it is first imported and runs
// nvidia-smi with that copy, so the fake driver tools must be on PATH before the import.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { BudgetSample } from '../../core/gpu/live-budget.js';
import type { ProbeResult } from '../../core/gpu/gpu-probe.js';

const root = resolve(import.meta.dirname, '../..');
export const FAKE_GPU_DIR = join(root, 'test/fixtures/fake-gpu');
const childScript = join(FAKE_GPU_DIR, 'live-budget-child.mjs');
const builtProbe = join(root, 'dist/core/gpu/gpu-probe.js');

export type ProbeMessage =
  | { type: 'probe'; result: ProbeResult }
  | { type: 'changed'; budget: BudgetSample; previous: BudgetSample | null }
  | { type: 'sampled'; budget: BudgetSample }
  | { type: 'error'; message: string };

export interface ProbeChildOptions {
  ourPids: number[];
  reserveBytes: number;
  limitBytes: number | null;
  llamaServer?: string;
  procRoot?: string;
}

/** The child, with a request that returns every line up to the command's own answer. */
export class ProbeChild {
  private readonly lines: ProbeMessage[] = [];
  private wake: (() => void) | null = null;
  private readonly stderr: string[] = [];

  /**
   * Starts the child with the fake tools first on PATH. `env` picks the fake machine
   * (FAKE_GPU_BOX) and where its driver state lives (FAKE_GPU_STATE_DIR). Throws when dist/
   * has not been built.
   */
  static start(options: ProbeChildOptions, env: Record<string, string>): ProbeChild {
    if (!existsSync(builtProbe)) throw new Error(`${builtProbe} is missing: run \`npm run build\` before the integration tests`);
    return new ProbeChild(
      spawn(process.execPath, [childScript, JSON.stringify(options)], {
        env: { ...process.env, PATH: `${FAKE_GPU_DIR}${delimiter}${process.env.PATH ?? ''}`, ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
  }

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      this.lines.push(JSON.parse(line) as ProbeMessage);
      this.wake?.();
    });
    child.stderr.on('data', (chunk: Buffer) => this.stderr.push(chunk.toString()));
    child.on('exit', () => this.wake?.());
  }

  /** Sends "probe" or "sample"; resolves with every message up to its answer; rejects on an error message. */
  async request(command: 'probe' | 'sample'): Promise<ProbeMessage[]> {
    const answer = command === 'probe' ? 'probe' : 'sampled';
    this.child.stdin.write(`${command}\n`);
    const seen: ProbeMessage[] = [];
    for (;;) {
      const next = this.lines.shift();
      if (next === undefined) {
        if (this.child.exitCode !== null) throw new Error(`probe child exited ${this.child.exitCode}: ${this.stderr.join('')}`);
        await new Promise<void>((wake) => { this.wake = wake; });
        continue;
      }
      seen.push(next);
      if (next.type === 'error') throw new Error(`probe child: ${next.message}`);
      if (next.type === answer) return seen;
    }
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((done) => this.child.once('exit', done));
    this.child.stdin.end();
    await exited;
  }
}
