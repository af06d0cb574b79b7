import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DASHBOARD_INDEX_URL, isDashboardUrl, isExternalHttpUrl, resolveDashboardFile } from '../../../electron/window-security.js';

const root = resolve('/srv/llmtray/dist/renderer');

describe('resolveDashboardFile', () => {
  it.each([
    [DASHBOARD_INDEX_URL, 'index.html'],
    ['llmtray://dashboard/', 'index.html'],
    ['llmtray://dashboard/assets/index-3f2a.js', 'assets/index-3f2a.js'],
    ['llmtray://dashboard/assets/a%20b.css?v=1#x', 'assets/a b.css'],
    // The URL parser resolves dot segments, encoded or not, and never above the root.
    ['llmtray://dashboard/%2e%2e/%2e%2e/secret', 'secret'],
  ])('%s is %s', (url, file) => {
    expect(resolveDashboardFile(root, url)).toEqual({ ok: true, path: join(root, file) });
  });

  it.each([
    ['llmtray://dashboard/assets/..%2f..%2f..%2fadmin-token', 404],
    ['llmtray://dashboard/..%5c..%5cadmin-token', 400],
    ['llmtray://dashboard/index.html%00.png', 400],
    ['llmtray://dashboard/%E0%A4%A', 400],
    ['llmtray://elsewhere/index.html', 404],
    ['file:///etc/passwd', 404],
  ] as const)('refuses %s with %i and a reason', (url, status) => {
    const result = resolveDashboardFile(root, url);
    expect(result).toMatchObject({ ok: false, status });
    if (!result.ok) expect(result.reason).toContain(url);
  });
});

describe('URL rules', () => {
  it('knows its own pages', () => {
    expect(isDashboardUrl('llmtray://dashboard/index.html#/models')).toBe(true);
    expect(isDashboardUrl('llmtray://dashboard.evil/index.html')).toBe(false);
    expect(isDashboardUrl('http://127.0.0.1:8080/')).toBe(false);
    expect(isDashboardUrl('not a url')).toBe(false);
  });

  it('lets only http(s) links out to the browser', () => {
    expect(isExternalHttpUrl('https://huggingface.co/models')).toBe(true);
    expect(isExternalHttpUrl('http://127.0.0.1:8080/metrics')).toBe(true);
    for (const url of ['file:///etc/passwd', 'javascript:alert(1)', 'smb://host/share', 'vscode://open', 'llmtray://dashboard/']) {
      expect(isExternalHttpUrl(url)).toBe(false);
    }
  });
});
