// The error for a field the schema does not know: where it is, what it was set to, and the
// field the person most likely meant. "cxt: 4096" for "ctx: 4096" is the typo a newcomer makes,
// and a list of seventeen field names does not point at the one they misspelt.
import type { z } from 'zod';
import { configSchema } from './schema.js';
import { describeValue, fieldPath } from './config-errors.js';

/** A schema node as zod 4 describes itself: only the parts that lead to an object's fields. */
interface SchemaDef {
  type: string;
  shape?: Record<string, { _zod: { def: SchemaDef } }>;
  innerType?: { _zod: { def: SchemaDef } };
  element?: { _zod: { def: SchemaDef } };
  valueType?: { _zod: { def: SchemaDef } };
}

const defOf = (schema: z.ZodType): SchemaDef => (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;

/** Past `.optional()`, `.default()`, `.prefault()`: the schema that holds the fields. */
function unwrapped(def: SchemaDef): SchemaDef {
  let current = def;
  while (current.innerType !== undefined) current = current.innerType._zod.def;
  return current;
}

/** The fields the config accepts at `path` (`["models", 0]` → a model's fields); undefined where no object is. */
export function knownFieldsAt(path: readonly PropertyKey[]): string[] | undefined {
  let def = unwrapped(defOf(configSchema));
  for (const key of path) {
    if (def.type === 'object' && typeof key === 'string' && def.shape?.[key] !== undefined) def = unwrapped(def.shape[key]._zod.def);
    else if (def.type === 'array' && typeof key === 'number' && def.element !== undefined) def = unwrapped(def.element._zod.def);
    else if (def.type === 'record' && def.valueType !== undefined) def = unwrapped(def.valueType._zod.def);
    else return undefined;
  }
  return def.type === 'object' && def.shape !== undefined ? Object.keys(def.shape) : undefined;
}

/** Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`: "cxt" is one from "ctx". */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The known field `key` was most likely meant to be, or undefined when none is close: the same
 * name in another case or with `_`/`-` (gpu_layers, modeldirs), or a slip of a letter or two
 * (one edit in short names, where two would make most short names "close" to each other).
 */
export function nearestField(key: string, known: readonly string[]): string | undefined {
  const plain = (name: string) => name.toLowerCase().replace(/[_-]/g, '');
  const same = known.find((name) => plain(name) === plain(key));
  if (same !== undefined) return same;
  let nearest: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(plain(key), plain(name));
    const allowed = Math.max(key.length, name.length) <= 5 ? 1 : 2;
    if (distance <= allowed && (nearest === undefined || distance < nearest.distance)) nearest = { name, distance };
  }
  return nearest?.name;
}

/**
 * "config.yaml: models[0].cxt: unknown field, set to 4096; did you mean "ctx"? Expected one of: …".
 * `shownValue` false keeps the value out (a client key's secret under a misspelt name).
 */
export function unknownFieldError(file: string, path: readonly PropertyKey[], key: string, value: unknown, shownValue = true): string {
  // Every strict object of the schema has fields; the empty list is a schema this walk cannot read.
  const known = knownFieldsAt(path) ?? [];
  const near = nearestField(key, known);
  const setTo = shownValue ? describeValue(value) : 'a value not shown here';
  const what = `${file}: ${fieldPath([...path, key])}: unknown field, set to ${setTo}`;
  const list = `one of: ${known.join(', ')}`;
  if (near !== undefined) return `${what}; did you mean "${near}"? Expected ${list}`;
  return known.length === 0 ? what : `${what}; expected ${list}`;
}
