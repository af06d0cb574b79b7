// Where the dashboard window's content comes from, and which senders and links it trusts.
//
// The dashboard is served from a custom scheme, llmtray://dashboard/, by main.ts from the built
// files in dist/renderer. Why not file://: every file:// page shares one origin with every
// other local file, so "the sender's URL is ours" would mean nothing and a fetch() from the
// page could read any file the person can; a custom standard scheme gives the dashboard an
// origin of its own, and main.ts adds the same CSP as the headless server to every response.
import { isAbsolute, relative, resolve, sep } from 'node:path';
import type { IpcInvokeEventLike } from './ipc-main-handlers.js';

export const DASHBOARD_SCHEME = 'llmtray';
export const DASHBOARD_HOST = 'dashboard';
export const DASHBOARD_INDEX_URL = `${DASHBOARD_SCHEME}://${DASHBOARD_HOST}/index.html`;

function parse(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}

/** Whether `url` is a page of our dashboard (any path under llmtray://dashboard/). */
export function isDashboardUrl(url: string): boolean {
  const parsed = parse(url);
  return parsed !== null && parsed.protocol === `${DASHBOARD_SCHEME}:` && parsed.host === DASHBOARD_HOST;
}

/**
 * The sender check for the IPC handlers: the invoke must come from the dashboard window's
 * webContents (`dashboardWebContentsId()`, null while there is no window) and from a frame
 * showing our dashboard. Never blocks.
 */
export function dashboardSenderCheck(dashboardWebContentsId: () => number | null): (event: IpcInvokeEventLike) => boolean {
  return (event) => {
    const id = dashboardWebContentsId();
    return id !== null && event.sender.id === id && event.senderFrame !== null && isDashboardUrl(event.senderFrame.url);
  };
}

export type DashboardFile = { ok: true; path: string } | { ok: false; status: 400 | 404; reason: string };

/**
 * The file under `rendererDir` that a llmtray://dashboard/ request asks for; `/` means
 * index.html. Refuses another host, a path that climbs out of the folder (`..`, `%2e%2e`,
 * an encoded slash or backslash) and NUL bytes, each with a sentence. Pure: does not touch
 * the disk (a missing file is the protocol handler's 404).
 */
export function resolveDashboardFile(rendererDir: string, requestUrl: string): DashboardFile {
  const parsed = parse(requestUrl);
  if (parsed === null || parsed.protocol !== `${DASHBOARD_SCHEME}:` || parsed.host !== DASHBOARD_HOST) {
    return { ok: false, status: 404, reason: `${requestUrl} is not a dashboard URL (${DASHBOARD_SCHEME}://${DASHBOARD_HOST}/…)` };
  }
  let path: string;
  try {
    path = decodeURIComponent(parsed.pathname);
  } catch {
    return { ok: false, status: 400, reason: `the path of ${requestUrl} is not valid percent-encoding` };
  }
  if (path.includes('\0') || path.includes('\\')) {
    return { ok: false, status: 400, reason: `the path of ${requestUrl} contains a NUL byte or a backslash` };
  }
  if (path === '/' || path === '') path = '/index.html';
  const root = resolve(rendererDir);
  const file = resolve(root, `.${path}`);
  const inside = relative(root, file);
  if (inside === '' || inside.startsWith('..') || isAbsolute(inside) || inside.split(sep).includes('..')) {
    return { ok: false, status: 404, reason: `${requestUrl} points outside the dashboard's files` };
  }
  return { ok: true, path: file };
}

/**
 * Whether a link the dashboard tries to open may go to the person's browser: http and https
 * only. Everything else (file:, javascript:, custom schemes that launch programs) is dropped,
 * because shell.openExternal hands the URL to the OS, which runs whatever handles the scheme.
 */
export function isExternalHttpUrl(url: string): boolean {
  const parsed = parse(url);
  return parsed !== null && (parsed.protocol === 'http:' || parsed.protocol === 'https:');
}
