// The desktop app's packaged layout, as build/electron-builder.yml describes it, built from the
// checkout's dist/ and node_modules: the `files` patterns choose what goes in, @electron/asar
// (what electron-builder packs with) writes resources/app.asar with the `asarUnpack` folders in
// resources/app.asar.unpacked, and extraResources' tray icons go to resources/tray.
//
// Plain Node cannot read inside an asar archive; Electron patches fs (and process.dlopen) so that
// resources/app.asar reads as a folder and an unpacked entry as its file in app.asar.unpacked.
// `installed` is that view, made from the archive: every packed entry extracted from it with
// asar.extractFile, every unpacked one a symlink into app.asar.unpacked (so a dlopen of it loads
// the real unpacked file, as Electron's does). The stand-in's README lists this as an assumption.
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import * as asar from '@electron/asar';
import { minimatch } from 'minimatch';
import { parse } from 'yaml';

const ROOT = resolve(import.meta.dirname, '..', '..');

export interface BuilderConfig {
  extraMetadata: { main: string };
  files: string[];
  asarUnpack: string[];
  extraResources: { from: string; to: string }[];
  linux: { executableArgs?: string[] };
}

export function readBuilderConfig(): BuilderConfig {
  return parse(readFileSync(join(ROOT, 'build', 'electron-builder.yml'), 'utf8')) as BuilderConfig;
}

/** electron-builder's ${os} and ${arch} for this machine. */
export function builderTarget(): { os: string; arch: string } {
  const os = ({ darwin: 'mac', win32: 'win' } as Record<string, string>)[process.platform] ?? process.platform;
  return { os, arch: process.arch };
}

function filesUnder(relativeDir: string): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(ROOT, dir))) {
      const path = join(dir, name);
      const stat = lstatSync(join(ROOT, path));
      if (stat.isDirectory()) walk(path);
      else if (stat.isFile()) found.push(path.split(sep).join('/'));
    }
  };
  walk(relativeDir);
  return found;
}

/**
 * The files electron-builder would take: the app's own and its production dependencies' (its
 * `node_modules/**` means those, never the dev ones), each kept or dropped by the last `files`
 * pattern that matches it, with ${os} and ${arch} for this machine.
 */
export function selectedFiles(config: BuilderConfig): string[] {
  const { os, arch } = builderTarget();
  const patterns = config.files.map((pattern) => pattern.replaceAll('${os}', os).replaceAll('${arch}', arch));
  const productionPackages = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(`${sep}node_modules${sep}`))
    .map((line) => relative(ROOT, line));
  const candidates = new Set(['package.json', ...['dist/core', 'dist/electron', 'dist/renderer'].flatMap(filesUnder), ...productionPackages.flatMap(filesUnder)]);
  return [...candidates].filter((file) => {
    let kept = false;
    for (const pattern of patterns) {
      const negated = pattern.startsWith('!');
      if (minimatch(file, negated ? pattern.slice(1) : pattern, { dot: true })) kept = !negated;
    }
    return kept;
  });
}

export interface PackagedLayout {
  /** The archive as @electron/asar wrote it. */
  archive: string;
  /** What Electron's fs shows: resources/app.asar (a folder here), app.asar.unpacked, tray. */
  resources: string;
  mainEntry: string;
}

/** Lays the package out under `base` from `files` (selectedFiles', or fewer where the caller says why). */
export async function layOutPackagedApp(base: string, config: BuilderConfig, files: string[]): Promise<PackagedLayout> {
  const staging = join(base, 'staging');
  for (const file of files) {
    const target = join(staging, file);
    mkdirSync(dirname(target), { recursive: true });
    if (file === 'package.json') continue;
    try {
      linkSync(join(ROOT, file), target);
    } catch {
      copyFileSync(join(ROOT, file), target);
    }
  }
  const appPackage = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(staging, 'package.json'), JSON.stringify({ ...appPackage, ...config.extraMetadata }, null, 2));

  const packedResources = join(base, 'packed', 'resources');
  mkdirSync(packedResources, { recursive: true });
  const archive = join(packedResources, 'app.asar');
  // electron-builder unpacks each asarUnpack folder with everything under it.
  await asar.createPackageWithOptions(staging, archive, { unpackDir: `{${config.asarUnpack.join(',')}}` });

  const resources = join(base, 'installed', 'resources');
  const view = join(resources, 'app.asar');
  mkdirSync(view, { recursive: true });
  // Unpacked entries are not read through the archive (below), so their folder moves beside the view.
  if (existsSync(`${archive}.unpacked`)) renameSync(`${archive}.unpacked`, `${view}.unpacked`);
  for (const entry of asar.listPackage(archive, { isPack: false })) {
    const inside = entry.replace(/^[\\/]/, '');
    const stat = asar.statFile(archive, inside) as { files?: unknown; unpacked?: boolean; link?: string };
    const target = join(view, inside);
    if (stat.files !== undefined) mkdirSync(target, { recursive: true });
    else if (stat.link !== undefined) continue;
    else if (stat.unpacked) symlinkSync(join(`${view}.unpacked`, inside), target);
    else writeFileSync(target, asar.extractFile(archive, inside));
  }
  for (const extra of config.extraResources) cpSync(join(ROOT, extra.from), join(resources, extra.to), { recursive: true });
  return { archive, resources, mainEntry: join(view, config.extraMetadata.main) };
}
