// Server-Sent Events read from a fetch body: how every client of the admin event stream
// (`/api/events`) reads it — the dashboard's HTTP bridge and the CLI alike — so both parse the
// wire the same way. Pure: globals only (fetch streams, TextDecoder), no imports.
//
// Why not EventSource: it cannot be told to stop retrying on a 401 (it just fails), it cannot
// notice a connection that went silent (a laptop that slept), and Node 20, where the transport
// is tested against a real server, has none. A fetch stream behaves the same in the browser,
// in Electron and in Node. The parser follows the WHATWG event-stream rules that matter here:
// `event:` and `data:` fields, multi-line data joined by "\n", comment lines, CR/LF/CRLF line
// ends (a CR at the end of one chunk may pair with an LF at the start of the next).

export interface SseMessage {
  /** The `event:` field, or 'message' when there was none. */
  type: string;
  data: string;
}

export interface SseParser {
  /** Feeds text as it arrives. */
  push(chunk: string): void;
  /** The stream ended: a CR held back as the possible first half of a CRLF ends its line. */
  end(): void;
}

/** A push parser: it calls `onMessage` once per complete event (one ended by a blank line). */
export function createSseParser(onMessage: (message: SseMessage) => void): SseParser {
  let buffer = '';
  let type = '';
  let data: string[] = [];

  const line = (text: string): void => {
    if (text === '') {
      if (data.length > 0) onMessage({ type: type || 'message', data: data.join('\n') });
      type = '';
      data = [];
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
    // id and retry: the bridge reconnects on its own schedule and the first event after a
    // reconnect is a full snapshot, so there is nothing to resume from.
  };

  const consume = (text: string): string => {
    const parts = text.split(/\r\n|\r|\n/);
    const rest = parts.pop() ?? '';
    for (const part of parts) line(part);
    return rest;
  };

  return {
    push(chunk) {
      buffer += chunk;
      // A trailing CR may be the first half of a CRLF; wait for the next chunk to decide.
      const holdBack = buffer.endsWith('\r') ? 1 : 0;
      buffer = consume(buffer.slice(0, buffer.length - holdBack)) + buffer.slice(buffer.length - holdBack);
    },
    end() {
      // An unterminated last line is dropped, as the spec says: its event never completed.
      consume(buffer.endsWith('\r') ? `${buffer.slice(0, -1)}\n` : buffer);
      buffer = '';
    },
  };
}

/**
 * Reads `body` to its end, calling `onMessage` per event and `onActivity` per chunk (heartbeat
 * comments included). Resolves when the server ends the stream; rejects when it is aborted or
 * the connection fails.
 */
export async function readEventStream(
  body: ReadableStream<Uint8Array>,
  onMessage: (message: SseMessage) => void,
  onActivity: () => void = () => {},
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = createSseParser(onMessage);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      onActivity();
      parser.push(decoder.decode(value, { stream: true }));
    }
    parser.push(decoder.decode());
    parser.end();
  } finally {
    reader.releaseLock();
  }
}
