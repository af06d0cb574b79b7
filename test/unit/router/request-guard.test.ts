import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../../core/router/request-guard.js';

describe('isLoopbackHost', () => {
  it.each([
    'localhost',
    'localhost:8080',
    'LOCALHOST:1',
    '127.0.0.1',
    '127.0.0.1:65535',
    '127.255.10.9:80',
    '[::1]',
    '[::1]:8080',
  ])('accepts %s', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });

  it.each([
    undefined,
    '',
    'evil.example',
    'localhost.evil.example',
    'evil.localhost.example:80',
    '127.0.0.1.evil.example',
    '127.0.0.256',
    '127.0.0',
    '128.0.0.1',
    '0.0.0.0',
    '192.168.1.20:8080',
    '[::2]',
    '[::ffff:7f00:1]x',
    'localhost:http',
    'localhost:8080:1',
    'user@localhost',
  ])('refuses %s', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });

  it('accepts a name only when it is listed in allowedHosts', () => {
    expect(isLoopbackHost('workstation.lan:8080')).toBe(false);
    expect(isLoopbackHost('workstation.lan:8080', ['Workstation.lan'])).toBe(true);
    expect(isLoopbackHost('other.lan', ['workstation.lan'])).toBe(false);
  });
});
