/**
 * Makes a switch over a union exhaustive: a new member is a compile error at every switch that
 * forgets it, and a value that slips past the types at run time fails loudly with its name.
 */
export function assertNever(value: never): never {
  throw new Error(`Unexpected value: ${JSON.stringify(value)}`);
}
