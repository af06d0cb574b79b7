import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { detectCapabilities, probeCapabilities } from '../../../core/engine/llama-server/capabilities.js';

const text = (name: string): string => readFileSync(new URL(`../../fixtures/${name}`, import.meta.url), 'utf8');
/** `llama-server --version` of the build whose help is the recent fixture, and of an older one. */
const RECENT_VERSION = 'version: 0.4.0-dev (build 1, commit 80fb11a)\nbuilt with GNU 12.2.0 for Linux x86_64\n';
const OLD_VERSION = 'version: 4567 (1d1e6a90)\nbuilt with cc (Ubuntu 13.2.0-23ubuntu4) 13.2.0 for x86_64-linux-gnu\n';

describe('detectCapabilities', () => {
  const recent = detectCapabilities(text('llama-server-help.txt'), RECENT_VERSION);
  const old = detectCapabilities(text('llama-server-help-old.txt'), OLD_VERSION);

  it('reads the version line', () => {
    expect(recent.version).toBe('0.4.0-dev (build 1, commit 80fb11a)');
    expect(old.version).toBe('4567 (1d1e6a90)');
  });

  it('finds the draft-length flag each build has', () => {
    expect(recent.draftMaxFlag).toBe('--spec-draft-n-max');
    expect(old.draftMaxFlag).toBe('--draft-max');
  });

  it('does not count flags whose help says they were removed', () => {
    // The recent help still lists --draft-max, with "the argument has been removed".
    expect(text('llama-server-help.txt')).toContain('--draft-max');
    expect(recent.flags.has('--draft-max')).toBe(false);
    expect(recent.flags.has('--draft')).toBe(false);
    expect(recent.flags.has('--spec-ngram-size-n')).toBe(false);
  });

  it('reads every spelling of a multi-name flag, including ones whose description starts on the next line', () => {
    for (const flag of ['-ngl', '--gpu-layers', '--n-gpu-layers', '-md', '--model-draft', '--spec-draft-model', '-ngld', '-fitt', '--fit-target']) {
      expect(recent.flags.has(flag), flag).toBe(true);
    }
    expect(old.flags.has('-ngld')).toBe(true);
    expect(old.flags.has('--n-gpu-layers-draft')).toBe(true);
  });

  it('does not mistake words inside placeholders for flags', () => {
    expect(recent.flags.has('-simple')).toBe(false);
    expect(recent.flags.has('-hi')).toBe(false);
  });

  it('lists --spec-type values only where the build has it', () => {
    expect(recent.specTypes).toContain('draft-simple');
    expect(recent.specTypes).toContain('ngram-cache');
    expect(old.specTypes).toEqual([]);
  });

  it("knows whether -ngl takes 'all'", () => {
    expect(recent.gpuLayersAll).toBe(true);
    expect(old.gpuLayersAll).toBe(false);
  });

  it('sees --fit and --mmproj only in the build that has them', () => {
    expect(recent.flags.has('--fit')).toBe(true);
    expect(old.flags.has('--fit')).toBe(false);
    expect(recent.flags.has('--mmproj')).toBe(true);
    expect(old.flags.has('--mmproj')).toBe(false);
  });
});

describe('probeCapabilities', () => {
  it('runs --help once per binary path and modification time', async () => {
    const runs: string[] = [];
    let mtime = 1;
    const deps = {
      run: async (command: string, args: readonly string[]) => {
        runs.push(`${command} ${args.join(' ')}`);
        return args[0] === '--help' ? text('llama-server-help.txt') : RECENT_VERSION;
      },
      mtimeOf: async () => mtime,
    };
    const first = await probeCapabilities('/opt/test/probe-cache/llama-server', deps);
    const again = await probeCapabilities('/opt/test/probe-cache/llama-server', deps);
    expect(again).toBe(first);
    expect(runs).toEqual(['/opt/test/probe-cache/llama-server --help', '/opt/test/probe-cache/llama-server --version']);
    mtime = 2; // rebuilt
    await probeCapabilities('/opt/test/probe-cache/llama-server', deps);
    expect(runs).toHaveLength(4);
  });

  it('does not cache a failed probe', async () => {
    let fail = true;
    const deps = {
      run: async () => {
        if (fail) throw new Error('permission denied');
        return text('llama-server-help-old.txt');
      },
      mtimeOf: async () => 7,
    };
    await expect(probeCapabilities('/opt/test/probe-fail/llama-server', deps)).rejects.toThrow('permission denied');
    fail = false;
    await expect(probeCapabilities('/opt/test/probe-fail/llama-server', deps)).resolves.toMatchObject({ draftMaxFlag: '--draft-max' });
  });
});
