// The one test for "a JSON object" (not null, not an array) that every reader of a parsed body
// asks. Its own file, on the ground floor, because readers on every floor of the router (the
// field checks, the engine's error answers, each protocol's translation) ask it, and a helper
// kept in one of them tied the others to it (issue 37's import circle through validate-request).
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
