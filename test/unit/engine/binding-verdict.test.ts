// The kept verdict of node-llama-cpp's binding test: where it lives, that it holds only for the
// same binding file on the same machine, and that it never points the engine at a file outside
// node-llama-cpp's packages. Real files in a temporary folder stand for the binding.
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  currentEnvironment, keepVerdict, readVerdict, verdictFile, type BindingEnvironment, type TestedBinding,
} from '../../../core/engine/embedded/runtime/binding-verdict.js';

const ENVIRONMENT: BindingEnvironment = { library: 'node-llama-cpp 3.21.1', cpu: 'AMD EPYC (flags abc)', kernel: '6.1.0', glibc: '2.36', node: '20.19.0 abi 115 x64', libraryPath: '|' };

let dir: string;
let home: string;
let file: string;
let binding: TestedBinding;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'binding-verdict-'));
  home = join(dir, 'node_modules', '@node-llama-cpp');
  mkdirSync(join(home, 'linux-x64', 'bins'), { recursive: true });
  const bindingPath = join(home, 'linux-x64', 'bins', 'llama-addon.node');
  writeFileSync(bindingPath, 'not really a binding');
  binding = { bindingPath, buildMetadata: { buildOptions: { gpu: false } } };
  file = join(dir, 'cache', 'llmtray', 'cpu-binding-verdict.json');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('verdictFile', () => {
  it("is in XDG_CACHE_HOME when that is absolute, else in ~/.cache, and nowhere off Linux", () => {
    expect(verdictFile({ XDG_CACHE_HOME: '/var/cache/me' }, 'linux', '/home/u')).toBe('/var/cache/me/llmtray/cpu-binding-verdict.json');
    // The XDG spec says a relative path is invalid and is to be ignored.
    expect(verdictFile({ XDG_CACHE_HOME: 'cache' }, 'linux', '/home/u')).toBe('/home/u/.cache/llmtray/cpu-binding-verdict.json');
    expect(verdictFile({}, 'linux', '/home/u')).toBe('/home/u/.cache/llmtray/cpu-binding-verdict.json');
    expect(verdictFile({}, 'darwin', '/Users/u')).toBeNull();
    expect(verdictFile({}, 'win32', 'C:\\Users\\u')).toBeNull();
  });
});

describe('a kept verdict', () => {
  it('gives back the binding it was kept for, on the same machine', async () => {
    await keepVerdict(file, binding, ENVIRONMENT);
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ ...binding, extBackendsPath: undefined });
  });

  it('keeps the backends folder beside the binding when there is one', async () => {
    const extBackendsPath = join(home, 'linux-x64', 'bins', 'backends');
    mkdirSync(extBackendsPath);
    await keepVerdict(file, { ...binding, extBackendsPath }, ENVIRONMENT);
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ ...binding, extBackendsPath });
  });

  it.each([
    ['node-llama-cpp version', { library: 'node-llama-cpp 3.22.0' }],
    ['CPU', { cpu: 'Intel Xeon (flags def)' }],
    ['kernel', { kernel: '6.12.0' }],
    ['glibc', { glibc: '2.41' }],
    ['Node', { node: '24.11.0 abi 137 x64' }],
    ['library path', { libraryPath: '/opt/cuda/lib64|' }],
  ])('no longer holds when the %s changed', async (_what, change) => {
    await keepVerdict(file, binding, ENVIRONMENT);
    expect(readVerdict(file, [home], { ...ENVIRONMENT, ...change })).toEqual({ unusable: expect.stringContaining('changed since it was tested') });
  });

  it('no longer holds when the binding file was replaced (an npm update)', async () => {
    await keepVerdict(file, binding, ENVIRONMENT);
    utimesSync(binding.bindingPath, new Date(), new Date(Date.now() + 60_000));
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ unusable: expect.stringContaining('changed since it was tested') });
  });

  it('no longer holds when a library beside the binding was replaced, added or removed (ggml loads one per CPU variant from there)', async () => {
    const bins = join(home, 'linux-x64', 'bins');
    const variant = join(bins, 'libggml-cpu-haswell.so');
    writeFileSync(variant, 'a CPU variant');
    await keepVerdict(file, binding, ENVIRONMENT);
    expect(readVerdict(file, [home], ENVIRONMENT)).not.toHaveProperty('unusable');
    utimesSync(variant, new Date(), new Date(Date.now() + 60_000));
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ unusable: expect.stringContaining('changed since it was tested') });

    await keepVerdict(file, binding, ENVIRONMENT);
    writeFileSync(join(bins, 'libggml-cpu-icelake.so'), 'another variant');
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ unusable: expect.stringContaining('changed since it was tested') });

    await keepVerdict(file, binding, ENVIRONMENT);
    rmSync(variant);
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ unusable: expect.stringContaining('changed since it was tested') });
  });

  it("no longer holds when the file's key was written for another machine (a copied cache folder)", async () => {
    await keepVerdict(file, binding, { ...ENVIRONMENT, cpu: 'another CPU' });
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ unusable: expect.stringContaining('changed since it was tested') });
  });

  it('says the binding is gone when its file was removed', async () => {
    await keepVerdict(file, binding, ENVIRONMENT);
    rmSync(binding.bindingPath);
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ unusable: 'its binding is gone (ENOENT)' });
  });

  it("refuses a binding outside node-llama-cpp's packages: the file is code the engine would load", async () => {
    const elsewhere = join(dir, 'elsewhere.node');
    writeFileSync(elsewhere, 'code');
    await keepVerdict(file, { ...binding, bindingPath: elsewhere }, ENVIRONMENT);
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ unusable: `its binding ${elsewhere} is outside node-llama-cpp's packages` });
    // A path that climbs out of a home is outside it too.
    const climbing = join(home, '..', '..', 'elsewhere.node');
    await keepVerdict(file, { ...binding, bindingPath: climbing }, ENVIRONMENT);
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ unusable: expect.stringContaining("is outside node-llama-cpp's packages") });
  });
});

describe('no verdict', () => {
  it('when none was kept yet', () => {
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ unusable: 'none kept yet' });
  });

  it('when the file is not JSON', () => {
    mkdirSync(join(dir, 'cache', 'llmtray'), { recursive: true });
    writeFileSync(file, '{"format": 1, "key"');
    expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ unusable: `${file} is unreadable (not JSON)` });
  });

  it('when the file is JSON of another shape or format', () => {
    mkdirSync(join(dir, 'cache', 'llmtray'), { recursive: true });
    for (const content of [{ format: 2, key: 'k', binding }, { format: 1, key: 'k' }, { format: 1, key: 'k', binding: { bindingPath: 5, buildMetadata: {} } }]) {
      writeFileSync(file, JSON.stringify(content));
      expect(readVerdict(file, [home], ENVIRONMENT)).toEqual({ unusable: `${file} is not a verdict this version keeps` });
    }
  });
});

describe('currentEnvironment', () => {
  it("reads this machine's kernel, glibc and Node, and leaves Node's report settings as they were", () => {
    const report = process.report as NodeJS.ProcessReport & { excludeNetwork?: boolean };
    const before = report.excludeNetwork;
    const environment = currentEnvironment('this CPU', 'node-llama-cpp 3.21.1');
    expect(environment.cpu).toBe('this CPU');
    expect(environment.library).toBe('node-llama-cpp 3.21.1');
    expect(environment.kernel).toMatch(/^\d+\.\d+/);
    expect(environment.glibc).toMatch(/^\d+\.\d+$/);
    expect(environment.node).toBe(`${process.versions.node} abi ${process.versions.modules} ${process.arch}`);
    expect(report.excludeNetwork).toBe(before);
  });
});
