// Sizes and durations as people write them in a config file.
//
// Why both decimal and binary units, and no bare "G": "2GB" and "2GiB" differ by 7 %, which is
// a whole small model at workstation scale, so each unit means exactly what it says; a bare
// "2G" is ambiguous between the two (docker reads it as GiB, disk vendors as GB) and is
// refused with the spellings that are accepted.

const SIZE_UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12,
  kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40,
};

export const SIZE_EXPECTATION = 'expected a size like "2GiB", "512MB" or a number of bytes';

/** Bytes for "2GiB", "1.5 GB", "512MB", "1024" or 1024; undefined for anything else (negative included). */
export function parseSize(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  if (!match) return undefined;
  const unit = SIZE_UNITS[(match[2] || 'b').toLowerCase()];
  return unit === undefined ? undefined : Math.floor(Number(match[1]) * unit);
}

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export const DURATION_EXPECTATION = 'expected a duration like "45s", "10m", "1h30m" or a number of seconds';

/**
 * Milliseconds for "45s", "10m", "1h30m", "500ms", or a number of seconds (the unit llama-swap's
 * `ttl` uses, so a number copied from there means the same here); undefined for anything else.
 */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) : undefined;
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (!/^(\d+(?:\.\d+)?(ms|s|m|h))+$/.test(text)) return undefined;
  let total = 0;
  for (const part of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(part[1]) * (DURATION_UNITS[part[2]!] ?? 0);
  return Math.round(total);
}
