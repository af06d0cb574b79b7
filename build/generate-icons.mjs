#!/usr/bin/env node
// Draws llmtray's icons and writes them as PNG: `node build/generate-icons.mjs [outDir]`
// (default: this folder). The outputs are committed; test/unit/electron/build-config.test.ts
// regenerates them into a temporary folder and fails when the committed ones differ.
//
// Why generated and not drawn in an editor: three health states × (macOS template, dark panel,
// light panel) × two densities is eighteen tray files that must stay consistent, and a script
// with only node:zlib needs no image tool on any machine.
//
// The glyph is three stacked bars, the models held in memory. The health badge sits in the
// lower right: on macOS (template images: black plus alpha, tinted by the menu bar, so shape
// is all there is) none for ok, a ring for loading, a solid dot for a problem; on Windows and
// Linux a green, amber or red dot on a glyph in the panel's contrast colour.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';

const HEALTH = ['ok', 'loading', 'problem'];
const BADGE = { ok: [46, 160, 67], loading: [210, 153, 34], problem: [218, 54, 51] };
const INK = { 'on-dark': [255, 255, 255], 'on-light': [31, 31, 31] };
/** Sub-samples per pixel along each axis: 4×4 gives smooth edges at 16 px. */
const SAMPLES = 4;

// ---- shapes, in unit coordinates (0..1 across the image) -------------------------------

const roundedRect = (x0, y0, x1, y1, r) => (x, y) => {
  const dx = Math.max(x0 + r - x, 0, x - (x1 - r));
  const dy = Math.max(y0 + r - y, 0, y - (y1 - r));
  return x >= x0 && x <= x1 && y >= y0 && y <= y1 && dx * dx + dy * dy <= r * r;
};
const circle = (cx, cy, r) => (x, y) => (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
const ring = (cx, cy, outer, inner) => (x, y) => circle(cx, cy, outer)(x, y) && !circle(cx, cy, inner)(x, y);

const BARS = [0.2, 0.43, 0.66].map((top) => roundedRect(0.1, top, 0.9, top + 0.15, 0.06));
const BADGE_AT = [0.78, 0.78];
/** Clear space around the badge so it reads apart from the bars. */
const BADGE_GAP = circle(...BADGE_AT, 0.29);
const BADGE_DOT = circle(...BADGE_AT, 0.2);
const BADGE_RING = ring(...BADGE_AT, 0.2, 0.11);

/**
 * Layers are drawn in order; each is [shape, rgba] or [shape, 'clear'] (punches a hole).
 * Returns RGBA bytes, non-premultiplied, `size`×`size`.
 */
function rasterize(size, layers) {
  const out = Buffer.alloc(size * size * 4);
  for (let py = 0; py < size; py++) {
    for (let px = 0; px < size; px++) {
      let r = 0, g = 0, b = 0, a = 0; // premultiplied sums over sub-samples
      for (let sy = 0; sy < SAMPLES; sy++) {
        for (let sx = 0; sx < SAMPLES; sx++) {
          const x = (px + (sx + 0.5) / SAMPLES) / size;
          const y = (py + (sy + 0.5) / SAMPLES) / size;
          let cr = 0, cg = 0, cb = 0, ca = 0;
          for (const [shape, colour] of layers) {
            if (!shape(x, y)) continue;
            if (colour === 'clear') {
              cr = cg = cb = ca = 0;
            } else {
              const alpha = colour[3] / 255;
              cr = colour[0] * alpha + cr * (1 - alpha);
              cg = colour[1] * alpha + cg * (1 - alpha);
              cb = colour[2] * alpha + cb * (1 - alpha);
              ca = alpha + ca * (1 - alpha);
            }
          }
          r += cr; g += cg; b += cb; a += ca;
        }
      }
      const n = SAMPLES * SAMPLES;
      const i = (py * size + px) * 4;
      const alpha = a / n;
      out[i] = alpha > 0 ? Math.round(r / n / alpha) : 0;
      out[i + 1] = alpha > 0 ? Math.round(g / n / alpha) : 0;
      out[i + 2] = alpha > 0 ? Math.round(b / n / alpha) : 0;
      out[i + 3] = Math.round(alpha * 255);
    }
  }
  return out;
}

// ---- PNG -----------------------------------------------------------------------------

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(bytes) {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** An 8-bit RGBA PNG; each row with filter 0, so the file depends only on the pixels. */
export function encodePng(size, rgba) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  const rows = Buffer.alloc(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) rgba.copy(rows, y * (size * 4 + 1) + 1, y * size * 4, (y + 1) * size * 4);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(rows, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

// ---- the icons ------------------------------------------------------------------------

function trayLayers(health, ink, badge) {
  const layers = BARS.map((bar) => [bar, [...ink, 255]]);
  if (badge === null) return layers;
  layers.push([BADGE_GAP, 'clear']);
  layers.push([badge.shape, [...badge.colour, 255]]);
  return layers;
}

function templateBadge(health) {
  if (health === 'ok') return null;
  return { shape: health === 'loading' ? BADGE_RING : BADGE_DOT, colour: [0, 0, 0] };
}

/** Every icon file: name → PNG bytes. */
export function icons() {
  const files = new Map();
  for (const health of HEALTH) {
    for (const [suffix, size] of [['', 16], ['@2x', 32]]) {
      files.set(`tray/tray-${health}Template${suffix}.png`, encodePng(size, rasterize(size, trayLayers(health, [0, 0, 0], templateBadge(health)))));
      for (const panel of ['on-dark', 'on-light']) {
        const layers = trayLayers(health, INK[panel], { shape: BADGE_DOT, colour: BADGE[health] });
        files.set(`tray/tray-${health}-${panel}${suffix}.png`, encodePng(size, rasterize(size, layers)));
      }
    }
  }
  // The app icon: the bars in white on a dark rounded square, the middle one in accent blue.
  const appLayers = [
    [roundedRect(0.04, 0.04, 0.96, 0.96, 0.2), [15, 23, 42, 255]],
    ...[0.26, 0.44, 0.62].map((top, i) => [roundedRect(0.2, top, 0.8, top + 0.12, 0.05), i === 1 ? [56, 189, 248, 255] : [241, 245, 249, 255]]),
  ];
  files.set('icon.png', encodePng(512, rasterize(512, appLayers)));
  return files;
}

const isMain = process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const outDir = process.argv[2] ?? dirname(fileURLToPath(import.meta.url));
  const files = icons();
  for (const [name, bytes] of files) {
    const path = join(outDir, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, bytes);
  }
  console.log(`generate-icons: wrote ${files.size} PNG files to ${outDir}`);
}
