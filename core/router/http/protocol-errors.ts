// What the listener answers when a request never reaches `handle`: bytes Node's HTTP parser
// refuses (a malformed request line, a header over the size limit, a body framed two ways at
// once), and CONNECT, which Node hands to a separate event. Left to Node, the first get a bare
// `400 Bad Request` with no body and the last a dropped connection; here each gets the same
// OpenAI-shaped error as every other refusal, so a client (or a proxy in front) can tell why.
// Found by the fuzz suite (test/integration/http-fuzz.test.ts).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody, type RouterError } from './errors.js';
import { ERROR_SOURCE_HEADER } from './headers.js';

/** Installs the answers on `server`. Never throws; a socket that is gone is left alone. */
export function answerProtocolErrors(server: Server): void {
  // The answer a connection is still writing: bytes that fail to parse after a good request
  // (a body longer than its content-length, pipelined junk) must not cut into that answer, or
  // write an error into the middle of it. The error goes out once it has finished. An answer
  // not begun is not waited for: its request can no longer arrive in full (the client closed
  // mid-body), so it would never begin, and the refusal is the answer.
  const answering = new WeakMap<Duplex, ServerResponse>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    answering.set(req.socket, res);
    res.once('close', () => {
      if (answering.get(req.socket) === res) answering.delete(req.socket);
    });
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
    const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    const answer = (refusal: RouterError): void => {
      const inFlight = answering.get(socket);
      if (inFlight === undefined || !inFlight.headersSent) return writeAndClose(socket, refusal);
      inFlight.once('close', () => writeAndClose(socket, refusal));
    };
    answer({
      status: tooLarge ? 431 : timedOut ? 408 : 400,
      source: 'router',
      type: 'invalid_request_error',
      code: tooLarge ? 'headers_too_large' : timedOut ? 'request_timeout' : 'malformed_request',
      param: null,
      message: tooLarge
        ? 'The request headers are larger than this server accepts (16 KiB in all).'
        : timedOut
          ? 'The request did not arrive in full in time.'
          : `The request is not valid HTTP/1.1 (${error.code ?? error.message}).`,
    });
  });
  server.on('connect', (_req, socket: Duplex) => {
    writeAndClose(socket, {
      status: 405,
      source: 'router',
      type: 'invalid_request_error',
      code: 'method_not_allowed',
      param: null,
      message: 'llmtray is not a proxy: CONNECT is not served.',
      headers: { allow: 'GET, POST, OPTIONS' },
    });
  });
}

/**
 * Writes the refusal and closes the socket the way a finished answer's is closed (lingering:
 * lingering-close.ts). A socket already closing after an answer is left to that close.
 */
function writeAndClose(socket: Duplex, error: RouterError): void {
  if (socket.destroyed || socket.writableEnded) return;
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify(errorBody(error));
  const headers = {
    ...error.headers,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    [ERROR_SOURCE_HEADER]: error.source,
    connection: 'close',
  };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  socket.write(`HTTP/1.1 ${error.status} ${STATUS_TEXT[error.status] ?? 'Error'}\r\n${head.join('\r\n')}\r\n\r\n${body}`);
  const closable = socket as Duplex & { destroySoon?: () => void };
  if (closable.destroySoon !== undefined) closable.destroySoon();
  else socket.end();
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};
