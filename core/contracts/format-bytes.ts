// One way to write a byte count for every surface (the policy's reasons, the router's 503s, the
// dashboard, the tray, the CLI), so that the number in a 503's reason and the same number in
// the memory picture read alike. Here in the contract, the layer every other one may import,
// rather than in the policy that uses it most: the renderer may import only core/contracts.

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/**
 * Bytes for a person, in binary units labelled as such (1 GiB = 1024 MiB, never "GB").
 * The largest unit in which the amount is at least 1; one decimal below 100 of that unit,
 * whole numbers from 100, a trailing ".0" dropped; bytes are always whole. So: "0 B",
 * "512 MiB", "9.1 GiB", "17.2 GiB", "24 GiB", "120 GiB".
 * Why a decimal up to 100 and not only below 10: budgets are tens of GiB, and "17 GiB held,
 * needs 7 GiB, 24 GiB budget" reads as if it fitted when the truth is 17.4 + 7 > 24.
 * Negative amounts keep their sign; NaN and infinities are printed as they are.
 */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return `${bytes} B`;
  const sign = bytes < 0 ? '-' : '';
  let value = Math.abs(bytes);
  let unit = 0;
  while (unit < UNITS.length - 1 && value >= 1024) {
    value /= 1024;
    unit++;
  }
  let shown = rounded(value, unit);
  // 1023.97 MiB must read "1 GiB", not "1024 MiB".
  if (shown >= 1024 && unit < UNITS.length - 1) {
    unit++;
    shown = rounded(value / 1024, unit);
  }
  return `${sign}${shown} ${UNITS[unit]}`;
}

function rounded(value: number, unit: number): number {
  return unit === 0 || value >= 100 ? Math.round(value) : Math.round(value * 10) / 10;
}
