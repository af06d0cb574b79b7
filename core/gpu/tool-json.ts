// Reading the JSON that AMD's tools print, which is not always only JSON.
//
// amd-smi and rocm-smi print warnings on stdout before the document ("WARNING: User is
// missing the following required groups: render, video", "WARNING: No JSON data to report"),
// and their number fields come in several shapes across versions: a number, a numeric string
// ("17163091968"), an object {"value": 32624, "unit": "MB"}, or "N/A". Both parsers share
// these two readers so one quirk is handled once.
import { errorMessage } from '../contracts/error-message.js';

/**
 * The JSON document in a tool's stdout: from the first line that starts with '{' or '['.
 * Throws an Error naming the tool and quoting the start of the output when there is none or
 * it does not parse, so the caller can put a sentence in the budget's reason.
 */
export function jsonDocumentIn(stdout: string, tool: string): unknown {
  const start = stdout.search(/^[[{]/m);
  if (start < 0) throw new Error(`${tool} printed no JSON: ${quote(stdout)}`);
  try {
    return JSON.parse(stdout.slice(start)) as unknown;
  } catch (error) {
    throw new Error(`${tool} printed JSON that does not parse (${errorMessage(error)}): ${quote(stdout)}`);
  }
}

const UNIT_BYTES: Record<string, number> = {
  b: 1,
  kb: 1024,
  kib: 1024,
  // amd-smi writes "MB" for MiB: on one MI300X it reported total_vram 196288 MB where rocm-smi
  // reported 205822885888 B, which is exactly 196288 × 1024².
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
};

/**
 * Bytes from any of the shapes above; `defaultUnit` applies to a bare number. null for
 * "N/A", a missing field, a negative or non-finite number, or a unit it does not know.
 */
export function bytesOf(value: unknown, defaultUnit: 'B' | 'MB'): number | null {
  let amount: unknown = value;
  let unit: string = defaultUnit;
  if (typeof value === 'object' && value !== null && 'value' in value) {
    amount = (value as { value: unknown }).value;
    const u = (value as { unit?: unknown }).unit;
    if (typeof u === 'string' && u.trim() !== '' && u.trim().toUpperCase() !== 'N/A') unit = u.trim();
  }
  if (typeof amount === 'string') {
    const m = /^\s*(-?[\d.]+)\s*([A-Za-z]*)\s*$/.exec(amount);
    if (m === null) return null;
    amount = Number(m[1]);
    if (m[2] !== undefined && m[2] !== '') unit = m[2];
  }
  const scale = UNIT_BYTES[unit.toLowerCase()];
  if (typeof amount !== 'number' || !Number.isFinite(amount) || amount < 0 || scale === undefined) return null;
  return Math.round(amount * scale);
}

function quote(stdout: string): string {
  const text = stdout.trim().replace(/\s+/g, ' ');
  if (text === '') return '(nothing)';
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text);
}
