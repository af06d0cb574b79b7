// Reading a secret off a request and comparing it, shared by the admin token check
// (core/admin/admin-auth.ts) and the router's client keys (core/router/http/client-keys.ts), so
// both accept the same header spellings and neither leaks a secret through timing.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The credential in `Authorization: Bearer <credential>` (the scheme in any case), or undefined. */
export function bearerOf(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined || !/^bearer /i.test(header)) return undefined;
  const credential = header.slice('bearer '.length).trim();
  return credential === '' ? undefined : credential;
}

/**
 * Equality whose time depends on neither where the strings differ nor their lengths: both are
 * hashed first, so timingSafeEqual always compares 32 bytes.
 */
export function constantTimeEquals(a: string, b: string): boolean {
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(a), digest(b));
}
