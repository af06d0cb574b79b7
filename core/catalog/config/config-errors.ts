// One shape for every config error: "<file>: <field path>: expected <what>, got <value>".
//
// Why one function: the schema, the cross-model checks (ids, drafts, fallbacks) and the
// vocabulary check all report into the same list the tray and the CLI show; a person fixing
// the file should read the same sentence structure whichever check caught the mistake.

/** `["models", 2, "ctx"]` → `models[2].ctx`; the empty path is the whole file. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? '(top level)' : out;
}

/** The value as a person would recognise it in their file, shortened when long. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (Array.isArray(value)) return `a list (${value.length} item${value.length === 1 ? '' : 's'})`;
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  return String(value);
}

/** The value at `path` inside parsed YAML, or undefined where the path leads nowhere. */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/**
 * "config.yaml: models[2].ctx: expected a positive integer, got -5". `expected` starts with
 * "expected"; `note` adds the fact that makes the value wrong when it is not visible in the
 * value itself ("models[0] already has it").
 */
export function configError(file: string, path: readonly PropertyKey[], expected: string, got: unknown, note?: string): string {
  return `${file}: ${fieldPath(path)}: ${expected}, got ${describeValue(got)}${note ? ` (${note})` : ''}`;
}
