// A free loopback port for the next model server.
//
// Binding :0 and closing leaves a short window in which another program may take the port;
// the supervisor closes it by relaunching on a fresh port when the engine reports the address
// in use (see PORT_IN_USE), rather than by holding the socket, which no engine could inherit.
import { createServer } from 'node:net';

/** What engines print when the port was taken between our probe and their bind. */
export const PORT_IN_USE = /couldn't bind|EADDRINUSE|address already in use/i;

/** A port that was free on 127.0.0.1 a moment ago. Rejects only when no port can be bound at all. */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('the OS gave no port for 127.0.0.1:0'))));
    });
  });
}
