// The value a JSON text cut short had begun: a tool call's arguments that the token limit cut
// (`{"city": "Osl`) read as far as they go (`{city: "Osl"}`), the way the Anthropic SDKs read a
// streamed tool_use's partial_json. The Messages API carries a call's input as an object, not
// as text, so a cut call needs its input read this way to be returned at all. Pure.

/** Where a prefix of the text could end: its length, and what closes it into JSON from there. */
interface Ending {
  at: number;
  closers: string;
}

/**
 * The value `text`, a JSON text cut short, had begun: the longest prefix that parses once its
 * open string, arrays and objects are closed (an unfinished key, literal or escape is left out).
 * Undefined when no prefix does (the text did not begin a JSON value).
 */
export function parsePartialJson(text: string): unknown {
  for (const { at, closers } of endings(text)) {
    try {
      return JSON.parse(text.slice(0, at) + closers);
    } catch {
      // An unfinished key, number or literal: try the next shorter ending.
    }
  }
  return undefined;
}

/** Every place the text could be cut and closed, longest first. */
function endings(text: string): Ending[] {
  const stack: string[] = [];
  const found: Ending[] = [];
  let inString = false;
  let escaped = false;
  const closersNow = (): string => (inString ? '"' : '') + [...stack].reverse().join('');
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    // Inside a string, cutting before an escape's end would leave a lone backslash.
    if (!escaped) found.push({ at: i, closers: closersNow() });
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') stack.push('}');
    else if (c === '[') stack.push(']');
    else if (c === '}' || c === ']') stack.pop();
  }
  if (!escaped) found.push({ at: text.length, closers: closersNow() });
  return found.reverse();
}
