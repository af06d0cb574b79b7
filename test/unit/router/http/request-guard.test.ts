import { describe, expect, it } from 'vitest';
import { isServedHost } from '../../../../core/router/http/request-guard.js';

describe('isServedHost', () => {
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
    expect(isServedHost(host)).toBe(true);
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
    expect(isServedHost(host)).toBe(false);
  });

  it('accepts the address the request arrived on, written as a Host header writes it, and no other address', () => {
    expect(isServedHost('192.168.1.20:11435', [], '192.168.1.20')).toBe(true);
    expect(isServedHost('192.168.1.20', [], '::ffff:192.168.1.20')).toBe(true);
    expect(isServedHost('[fe80::1]:11435', [], 'FE80::1')).toBe(true);
    expect(isServedHost('192.168.1.21:11435', [], '192.168.1.20')).toBe(false);
    expect(isServedHost('fe80::1', [], 'fe80::1')).toBe(false);
    expect(isServedHost('192.168.1.20.evil.example', [], '192.168.1.20')).toBe(false);
  });

  it('accepts a name only when it is listed in allowedHosts', () => {
    expect(isServedHost('workstation.lan:8080')).toBe(false);
    expect(isServedHost('workstation.lan:8080', ['Workstation.lan'])).toBe(true);
    expect(isServedHost('other.lan', ['workstation.lan'])).toBe(false);
  });
});
