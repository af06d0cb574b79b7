// Closing a connection without losing the answer on it (RFC 9112 §9.6, "lingering close").
//
// When a client asks for `Connection: close`, Node ends the socket once the response is
// written and destroys it as soon as its FIN is out. If the client is still sending a body the
// route never read (a refused upload, a GET with a body), the kernel then has unread bytes on
// a closed socket and answers them with a reset, and a reset makes the client's kernel throw
// away the answer it had not yet handed to the client: the 401 or 413 never arrives. The fuzz
// suite found it (test/integration/http-fuzz.test.ts): a megabyte POST refused for its missing
// key got no answer at all. So, as nginx and Apache do: send the FIN, keep reading and
// discarding what still comes, and destroy the socket when the client closes its side or
// LINGER_MS after our FIN, whichever is first.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** Long enough for a client on a LAN to read the answer and stop sending; short enough to hold no socket for long. */
const LINGER_MS = 2_000;

/** Makes every connection of `server` close lingering. Call before it listens. */
export function lingerOnClose(server: Server): void {
  server.on('connection', (socket: Socket) => {
    // Node's http server calls destroySoon() to close a connection it will not keep alive.
    socket.destroySoon = () => {
      if (socket.writable) socket.end();
      const destroy = (): void => {
        socket.destroy();
      };
      socket.once('end', destroy);
      const timer = setTimeout(destroy, LINGER_MS);
      timer.unref();
      socket.once('close', () => clearTimeout(timer));
      socket.resume();
    };
  });
}
