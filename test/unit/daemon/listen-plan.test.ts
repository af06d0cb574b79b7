// Where the daemon listens and whether it may: the LAN mode's rules before any port is bound.
import { describe, expect, it } from 'vitest';
import type { ListenConfig } from '../../../core/catalog/config/load-config.js';
import { listenRefusal, localOrigin, networkEndpoints, planListen, type InterfaceAddress } from '../../../core/daemon/listen-plan.js';

const listen = (settings: Partial<ListenConfig> = {}): ListenConfig => ({
  host: '127.0.0.1',
  port: 11435,
  clientKeys: [],
  allowedHosts: [],
  corsOrigins: [],
  admin: 'loopback',
  ...settings,
});
const CONFIG = '/home/ada/.config/llmtray/config.yaml';
const where = { configPath: CONFIG, fromFlag: true, demo: false };
const KEY = { name: 'laptop', key: '0123456789abcdef0123' };

describe('planListen', () => {
  it.each([
    ['127.0.0.1', false, false],
    ['::1', false, false],
    ['localhost', false, false],
    ['LOCALHOST', false, false],
    ['0.0.0.0', true, false],
    ['::', true, false],
    ['192.168.1.20', true, true],
    ['127.0.0.2', true, true],
    ['workstation.lan', true, true],
  ])('%s: network %s, a second listener on 127.0.0.1 %s', (host, network, loopbackToo) => {
    expect(planListen(host)).toEqual({ host, network, loopbackToo });
  });
});

describe('listenRefusal', () => {
  it('lets a loopback listener start without keys, and a network one with a key', () => {
    expect(listenRefusal(planListen('127.0.0.1'), listen(), where)).toBeNull();
    expect(listenRefusal(planListen('0.0.0.0'), listen({ clientKeys: [KEY] }), where)).toBeNull();
  });

  it('refuses a network address without a key, naming the flag, the field to set and the file', () => {
    const refusal = listenRefusal(planListen('0.0.0.0'), listen(), where);
    expect(refusal).toContain('--host 0.0.0.0 can be reached from other machines');
    expect(refusal).toContain(`add one under listen.clientKeys in ${CONFIG}`);
  });

  it('names listen.host when the address came from the config file', () => {
    const refusal = listenRefusal(planListen('192.168.1.20'), listen({ host: '192.168.1.20' }), { ...where, fromFlag: false });
    expect(refusal).toMatch(/^listen\.host "192\.168\.1\.20" in \/home\/ada\/\.config\/llmtray\/config\.yaml can be reached/);
  });

  it('tells the demo, whose config has no keys, to drop --host', () => {
    expect(listenRefusal(planListen('0.0.0.0'), listen(), { ...where, demo: true })).toContain('run the demo on 127.0.0.1 (drop --host)');
  });

  it('answers a listen.host edited into the demo\'s kept config with the field to set there, and no flag', () => {
    const demoConfig = '/home/ada/.local/share/llmtray/demo/config.yaml';
    const refusal = listenRefusal(planListen('0.0.0.0'), listen({ host: '0.0.0.0' }), { configPath: demoConfig, fromFlag: false, demo: true });
    expect(refusal).toContain(`add one under listen.clientKeys in ${demoConfig}`);
    expect(refusal).not.toMatch(/(^|\s|\()--[a-z]/);
  });
});

describe('where clients reach it', () => {
  const interfaces: InterfaceAddress[] = [
    { address: '127.0.0.1', family: 'IPv4', internal: true },
    { address: '192.168.1.20', family: 'IPv4', internal: false },
    { address: 'fe80::1', family: 'IPv6', internal: false },
    { address: '2001:db8::20', family: 'IPv6', internal: false },
  ];

  it('local tools use loopback, ::1 only behind an IPv6 wildcard', () => {
    expect(localOrigin(planListen('192.168.1.20'), 8080)).toBe('http://127.0.0.1:8080');
    expect(localOrigin(planListen('0.0.0.0'), 8080)).toBe('http://127.0.0.1:8080');
    expect(localOrigin(planListen('::'), 8080)).toBe('http://[::1]:8080');
  });

  it('prints the listen address, or the machine\'s external addresses behind a wildcard, then the allowed names', () => {
    expect(networkEndpoints(planListen('127.0.0.1'), 8080, ['workstation.lan'], interfaces)).toEqual([]);
    expect(networkEndpoints(planListen('192.168.1.20'), 8080, ['workstation.lan'], interfaces)).toEqual([
      'http://192.168.1.20:8080/v1',
      'http://workstation.lan:8080/v1',
    ]);
    expect(networkEndpoints(planListen('0.0.0.0'), 8080, [], interfaces)).toEqual(['http://192.168.1.20:8080/v1']);
    expect(networkEndpoints(planListen('::'), 8080, [], interfaces)).toEqual(['http://192.168.1.20:8080/v1', 'http://[2001:db8::20]:8080/v1']);
  });
});
