// The packaging config cannot be exercised here (electron-builder downloads Electron), so this
// checks what can go wrong without running it: that every path it names exists or is what the
// build emits, that each target ships a llama.cpp binary package, and that the committed icons
// are valid PNGs, current with their generator, and complete for every platform and state.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { inflateSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import preloadConfig from '../../../electron/vite.preload.config.js';
import { trayIconDir, trayIconFile } from '../../../electron/tray-icons.js';

const root = resolve('.');
const config = parse(readFileSync(join(root, 'build/electron-builder.yml'), 'utf8')) as {
  extraMetadata: { main: string };
  files: string[];
  asarUnpack: string[];
  extraResources: Array<{ from: string; to: string }>;
  linux: { target: Array<{ target: string; arch: string[] }>; icon: string };
  mac: { target: Array<{ target: string; arch: string[] }>; icon: string };
  win: { target: Array<{ target: string; arch: string[] }>; icon: string };
};

/** Where tsc puts the JavaScript for `source` under electron/tsconfig.json. */
function emittedPath(source: string): string {
  const tsconfig = JSON.parse(readFileSync(join(root, 'electron/tsconfig.json'), 'utf8')) as { compilerOptions: { outDir: string; rootDir: string } };
  const outDir = resolve(root, 'electron', tsconfig.compilerOptions.outDir);
  const rootDir = resolve(root, 'electron', tsconfig.compilerOptions.rootDir);
  return relative(root, join(outDir, relative(rootDir, join(root, source)))).replace(/\.ts$/, '.js').split('\\').join('/');
}

interface Png {
  width: number;
  height: number;
  rgba: Buffer;
}

/** Decodes the PNGs the generator writes (8-bit RGBA, filter 0), checking every chunk's CRC. */
function decodePng(bytes: Buffer, name: string): Png {
  expect(bytes.subarray(0, 8).toString('hex'), `${name} signature`).toBe('89504e470d0a1a0a');
  let offset = 8;
  let width = 0;
  let height = 0;
  const idat: Buffer[] = [];
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (data: Buffer): number => {
    let c = 0xffffffff;
    for (const byte of data) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  for (;;) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString('ascii', offset + 4, offset + 8);
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    expect(bytes.readUInt32BE(offset + 8 + length), `${name} ${type} CRC`).toBe(crc(bytes.subarray(offset + 4, offset + 8 + length)));
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      expect([data[8], data[9]], `${name} is 8-bit RGBA`).toEqual([8, 6]);
    }
    if (type === 'IDAT') idat.push(data);
    offset += 12 + length;
    if (type === 'IEND') break;
  }
  const raw = inflateSync(Buffer.concat(idat));
  expect(raw.length).toBe(height * (width * 4 + 1));
  const rgba = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) raw.copy(rgba, y * width * 4, y * (width * 4 + 1) + 1, (y + 1) * (width * 4 + 1));
  return { width, height, rgba };
}

const png = (path: string): Png => decodePng(readFileSync(join(root, path)), path);

describe('build/electron-builder.yml', () => {
  it('starts the main process that electron/tsconfig.json emits', () => {
    expect(config.extraMetadata.main).toBe(emittedPath('electron/main.ts'));
    expect(config.files).toEqual(expect.arrayContaining(['package.json', 'dist/core/**/*', 'dist/electron/**/*', 'dist/renderer/**/*', 'node_modules/**/*']));
  });

  it('packs the preload where main.ts loads it from (dist/electron/preload.cjs)', () => {
    const lib = preloadConfig.build?.lib;
    if (!lib || typeof lib.fileName !== 'function') throw new Error('vite.preload.config.ts has no lib.fileName function');
    expect(relative(root, resolve(root, 'electron', preloadConfig.build!.outDir!))).toBe('dist/electron');
    expect(lib.fileName('cjs', 'preload')).toBe('preload.cjs');
    expect(readFileSync(join(root, 'electron/main.ts'), 'utf8')).toContain("join(here, 'preload.cjs')");
  });

  it('builds AppImage and deb, dmg, nsis', () => {
    expect(config.linux.target.map((t) => t.target)).toEqual(['AppImage', 'deb']);
    expect(config.mac.target.map((t) => t.target)).toEqual(['dmg']);
    expect(config.win.target.map((t) => t.target)).toEqual(['nsis']);
  });

  it('ships each target its own llama.cpp binary packages and no other platform\'s', () => {
    const optional = Object.keys(
      (JSON.parse(readFileSync(join(root, 'node_modules/node-llama-cpp/package.json'), 'utf8')) as { optionalDependencies: Record<string, string> }).optionalDependencies,
    ).map((name) => name.replace('@node-llama-cpp/', ''));
    const include = config.files.find((pattern) => pattern.startsWith('node_modules/@node-llama-cpp/'));
    expect(include).toBe('node_modules/@node-llama-cpp/${os}-${arch}*/bins/**/*');
    expect(config.files).toContain('!node_modules/@node-llama-cpp/*/bins/**/*');
    for (const [os, platform] of [['linux', config.linux], ['mac', config.mac], ['win', config.win]] as const) {
      for (const arch of platform.target.flatMap((t) => t.arch)) {
        const shipped = optional.filter((name) => name.startsWith(`${os}-${arch}`));
        expect(shipped.length, `${os}-${arch} ships no node-llama-cpp binary package`).toBeGreaterThan(0);
        expect(shipped.every((name) => name.startsWith(`${os}-`))).toBe(true);
      }
    }
    expect(config.asarUnpack).toContain('node_modules/@node-llama-cpp/*');
  });

  it('puts the tray icons where the packaged app looks for them, with every file it can ask for', () => {
    const [resource] = config.extraResources;
    expect(resource).toBeDefined();
    expect(trayIconDir({ isPackaged: true, resourcesPath: '/res', appPath: '/res/app.asar' })).toBe(join('/res', resource!.to));
    expect(trayIconDir({ isPackaged: false, resourcesPath: '/x', appPath: root })).toBe(join(root, resource!.from));
    const present = new Set(readdirSync(join(root, resource!.from)));
    for (const platform of ['darwin', 'linux', 'win32'] as const) {
      for (const health of ['ok', 'loading', 'problem'] as const) {
        for (const panelIsDark of [true, false]) {
          const file = trayIconFile({ platform, health, panelIsDark });
          expect(present.has(file), file).toBe(true);
          expect(present.has(file.replace('.png', '@2x.png')), `${file} @2x`).toBe(true);
        }
      }
    }
  });

  it('has an app icon large enough for every platform (512 px)', () => {
    for (const icon of new Set([config.linux.icon, config.mac.icon, config.win.icon])) {
      const { width, height } = png(icon);
      expect([width, height]).toEqual([512, 512]);
    }
  });
});

describe('the generated icons', () => {
  const out = mkdtempSync(join(tmpdir(), 'llmtray-icons-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('are what build/generate-icons.mjs makes now', () => {
    const result = spawnSync(process.execPath, [join(root, 'build/generate-icons.mjs'), out], { encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    const generated = ['icon.png', ...readdirSync(join(out, 'tray')).map((name) => `tray/${name}`)];
    expect(generated.length).toBe(19);
    for (const name of generated) {
      expect(readFileSync(join(out, name)).equals(readFileSync(join(root, 'build', name))), `build/${name} is stale: run node build/generate-icons.mjs`).toBe(true);
    }
  });

  it('are 16 px with a 32 px @2x, macOS templates are black with alpha, and the three states look different', () => {
    for (const variant of ['Template', '-on-dark', '-on-light']) {
      const pixels = ['ok', 'loading', 'problem'].map((health) => {
        const small = png(`build/tray/tray-${health}${variant}.png`);
        const large = png(`build/tray/tray-${health}${variant}@2x.png`);
        expect([small.width, large.width]).toEqual([16, 32]);
        return large.rgba;
      });
      expect(pixels[0]!.equals(pixels[1]!) || pixels[1]!.equals(pixels[2]!) || pixels[0]!.equals(pixels[2]!)).toBe(false);
    }
    for (const health of ['ok', 'loading', 'problem']) {
      const { rgba } = png(`build/tray/tray-${health}Template@2x.png`);
      let coloured = 0;
      for (let i = 0; i < rgba.length; i += 4) if (rgba[i]! + rgba[i + 1]! + rgba[i + 2]! !== 0) coloured++;
      expect(coloured, `tray-${health}Template@2x.png has non-black pixels`).toBe(0);
    }
  });
});
