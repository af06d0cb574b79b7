// A recording stand-in for the `electron` module, for running the built main process
// (dist/electron/main.js) under plain Node where the Electron binary cannot be downloaded.
//
// It follows Electron 45's documented behaviour for exactly the APIs main.ts uses (README.md
// lists every assumption, so the first run on a real desktop can confirm them), records what the
// app did as JSON lines in $ELECTRON_STAND_IN_RECORD (tray menus, images and tooltips, windows
// and their options, page loads, error boxes, notifications, the exit code), and lets a test
// drive it over the Node IPC channel (test/support/electron-main-process.ts): click a menu item,
// invoke an IPC channel from a good or a bad sender, fetch from a registered protocol, navigate,
// ask for a permission, emit powerMonitor's 'shutdown', quit. Nothing here decides anything for
// the app; where Electron would fail (a Tray before 'ready', setPath to a missing folder) it fails.
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const RECORD_FILE = process.env.ELECTRON_STAND_IN_RECORD;

/** One line of what the app did. Synchronous, so nothing is lost when the process exits right after. */
function record(what, data = {}) {
  if (RECORD_FILE) appendFileSync(RECORD_FILE, `${JSON.stringify({ what, at: Date.now(), pid: process.pid, ...data })}\n`);
}

/** An event object with Electron's preventDefault/defaultPrevented. */
function makeEvent(fields = {}) {
  const event = {
    defaultPrevented: false,
    preventDefault() {
      event.defaultPrevented = true;
    },
    ...fields,
  };
  return event;
}

// ---------------------------------------------------------------------------------------------
// app: lifecycle, paths, the single-instance lock, quit and exit.

/** The folder of the package.json that names the main script: `electron .` from the checkout. */
function findAppPath() {
  let dir = dirname(process.argv[1] ?? process.cwd());
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

const appPath = findAppPath();
const appPackage = JSON.parse(readFileSync(join(appPath, 'package.json'), 'utf8'));
const appName = appPackage.productName ?? appPackage.name;
// ELECTRON_STAND_IN_PACKAGED=1: run from a packaged layout (test/support/packaged-layout.ts),
// whose app folder is resources/app.asar; else Electron's own resources folder when run
// unpackaged (node_modules/electron/dist/resources).
const packaged = process.env.ELECTRON_STAND_IN_PACKAGED === '1';
process.resourcesPath = packaged ? dirname(appPath) : join(appPath, 'node_modules', 'electron', 'dist', 'resources');
process.type = 'browser';

function defaultAppData() {
  if (process.platform === 'win32') return process.env.APPDATA ?? join(homedir(), 'AppData', 'Roaming');
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support');
  return process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
}

let isReady = false;
let exiting = false;
/** Work that must finish before the process ends (telling the first instance about a second one). */
const beforeExit = new Set();
let singleton = null;
/** Set by app.relaunch: what starts when this process exits. */
let relaunchAs = null;

/**
 * A switch of the process's command line as Chromium parses it: `--name=value` anywhere in argv
 * (the last one wins), `--name` alone with the value ''; undefined when absent.
 */
function commandLineSwitch(name) {
  let value;
  for (const arg of process.argv.slice(1)) {
    if (arg === `--${name}`) value = '';
    else if (arg.startsWith(`--${name}=`)) value = arg.slice(name.length + 3);
  }
  return value;
}

/**
 * The relaunched app, as Electron starts it: the same environment, the given arguments. Here the
 * "binary" is Node with this stand-in registered, whose script must come before the app's own
 * arguments (Chromium takes switches anywhere; Node would read one before the script as its own).
 */
function startRelaunched() {
  const script = process.argv[1];
  const appArgs = relaunchAs.args.filter((arg) => arg !== script);
  const child = spawn(relaunchAs.execPath, [...process.execArgv, script, ...appArgs], { env: process.env, stdio: 'ignore', detached: true });
  child.unref();
  record('relaunched', { childPid: child.pid });
}

class App extends EventEmitter {
  name = appName;
  isPackaged = packaged;
  commandLine = {
    appendSwitch: (name, value) => record('append-switch', { name, value }),
    hasSwitch: (name) => commandLineSwitch(name) !== undefined,
    getSwitchValue: (name) => commandLineSwitch(name) ?? '',
  };
  #paths = new Map();
  #readyPromise = new Promise((resolve) => {
    this.once('ready', () => resolve());
  });
  #loginItem = { openAtLogin: false, args: [] };

  getName() {
    return this.name;
  }
  getVersion() {
    return appPackage.version;
  }
  getAppPath() {
    return appPath;
  }
  isReady() {
    return isReady;
  }
  whenReady() {
    return this.#readyPromise;
  }
  getPath(name) {
    if (this.#paths.has(name)) return this.#paths.get(name);
    switch (name) {
      case 'home':
        return homedir();
      case 'appData':
        return defaultAppData();
      case 'userData':
        return join(this.getPath('appData'), this.name);
      case 'sessionData':
        return this.getPath('userData');
      case 'temp':
        return tmpdir();
      case 'logs':
        return join(this.getPath('userData'), 'logs');
      case 'exe':
        return process.execPath;
      default:
        throw new Error(`Failed to get '${name}' path`);
    }
  }
  setPath(name, path) {
    // Electron: "If the path specifies a directory that does not exist, an Error is thrown."
    if (!existsSync(path) || !statSync(path).isDirectory()) throw new Error(`Failed to set path: ${path} does not exist`);
    if (isReady && (name === 'userData' || name === 'sessionData')) record('warning', { text: `setPath('${name}') after ready: Chromium already chose its profile` });
    this.#paths.set(name, path);
    record('set-path', { name, path });
  }
  setAppUserModelId(id) {
    record('app-user-model-id', { id });
  }
  getLoginItemSettings() {
    return { ...this.#loginItem };
  }
  setLoginItemSettings(settings) {
    this.#loginItem = { ...this.#loginItem, ...settings };
    record('login-item', { settings });
  }
  dock = process.platform === 'darwin' ? { hide: () => record('dock-hide'), show: async () => record('dock-show') } : undefined;

  /**
   * Chromium's process singleton: a lock file and a socket in userData. The second instance
   * hands its argv and cwd to the first, which emits 'second-instance', and gets false.
   */
  requestSingleInstanceLock(additionalData) {
    if (singleton !== null) return true;
    const dir = this.getPath('userData');
    mkdirSync(dir, { recursive: true });
    const lockPath = join(dir, 'SingletonLock');
    const socketPath = join(dir, 'SingletonSocket');
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(lockPath, 'wx');
        writeSync(fd, String(process.pid));
        closeSync(fd);
        break;
      } catch (error) {
        if (error.code !== 'EEXIST') throw error;
      }
      const holder = Number.parseInt(readFileSync(lockPath, 'utf8'), 10);
      if (Number.isInteger(holder) && holder !== process.pid && isAlive(holder)) {
        record('single-instance-lock', { granted: false, holder });
        beforeExit.add(tellFirstInstance(socketPath, { argv: process.argv, cwd: process.cwd(), additionalData: additionalData ?? null }));
        return false;
      }
      try {
        unlinkSync(lockPath);
      } catch {
        // Another starter took it over first; the next attempt decides.
      }
    }
    try {
      unlinkSync(socketPath);
    } catch {
      // None left behind.
    }
    const server = createServer((socket) => {
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk) => (text += chunk));
      socket.on('end', () => {
        const message = JSON.parse(text);
        record('second-instance', { argv: message.argv });
        this.emit('second-instance', makeEvent(), message.argv, message.cwd, message.additionalData);
      });
    });
    server.listen(socketPath);
    server.unref();
    singleton = { lockPath, server };
    record('single-instance-lock', { granted: true });
    return true;
  }
  hasSingleInstanceLock() {
    return singleton !== null;
  }

  /** Electron: before-quit, then every window is closed (each may refuse), then will-quit, quit, exit 0. */
  quit() {
    if (exiting) return;
    record('quit-requested');
    const beforeQuit = makeEvent();
    this.emit('before-quit', beforeQuit);
    if (beforeQuit.defaultPrevented) return record('quit-held');
    for (const window of BrowserWindow.getAllWindows()) {
      window.close();
      if (!window.isDestroyed()) return record('quit-cancelled', { by: 'a window that refused to close' });
    }
    const willQuit = makeEvent();
    this.emit('will-quit', willQuit);
    if (willQuit.defaultPrevented) return record('quit-cancelled', { by: 'will-quit' });
    this.emit('quit', makeEvent(), 0);
    exitProcess(0);
  }

  /** Electron: the app starts again, with `args` in place of process.argv.slice(1), once this one exits. */
  relaunch(options = {}) {
    relaunchAs = { args: options.args ?? process.argv.slice(1), execPath: options.execPath ?? process.execPath };
    record('relaunch', relaunchAs);
  }

  /** Electron: exits at once with the code; no before-quit, no will-quit, windows closed without asking. */
  exit(code = 0) {
    exitProcess(code);
  }
}

export const app = new App();

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

function tellFirstInstance(socketPath, message) {
  return new Promise((resolve) => {
    const socket = createConnection(socketPath, () => socket.end(JSON.stringify(message)));
    socket.on('close', () => resolve());
    socket.on('error', () => resolve());
  });
}

function exitProcess(code) {
  if (exiting) return;
  exiting = true;
  record('exit', { code });
  if (relaunchAs !== null) startRelaunched();
  for (const window of [...windows]) window.destroy();
  if (singleton !== null) {
    try {
      if (readFileSync(singleton.lockPath, 'utf8') === String(process.pid)) unlinkSync(singleton.lockPath);
    } catch {
      // Already gone.
    }
  }
  const bounded = new Promise((resolve) => setTimeout(resolve, 5_000).unref());
  Promise.race([Promise.allSettled([...beforeExit]), bounded]).then(() => process.exit(code));
}

// 'ready' once the main script's first turn is over, as Electron emits it after the app's code ran.
setTimeout(() => {
  if (exiting) return;
  isReady = true;
  record('ready');
  app.emit('will-finish-launching');
  app.emit('ready', makeEvent(), {});
}, 0);

function requireReady(what) {
  if (!isReady) throw new Error(`${what} cannot be used before the app is ready`);
}

// ---------------------------------------------------------------------------------------------
// nativeImage, nativeTheme, clipboard, shell, dialog, Notification.

class NativeImage {
  constructor(path) {
    this.path = path;
  }
  isEmpty() {
    return this.path === '' || !existsSync(this.path);
  }
  toDataURL() {
    return this.isEmpty() ? 'data:image/png;base64,' : `data:image/png;base64,${readFileSync(this.path).toString('base64')}`;
  }
}

export const nativeImage = {
  createFromPath: (path) => new NativeImage(path),
  createEmpty: () => new NativeImage(''),
};

class NativeTheme extends EventEmitter {
  get shouldUseDarkColors() {
    return process.env.ELECTRON_STAND_IN_DARK === '1';
  }
  themeSource = 'system';
}
export const nativeTheme = new NativeTheme();

export const clipboard = {
  writeText: (text) => record('clipboard', { text }),
  readText: () => '',
};

export const shell = {
  openExternal: async (url) => record('open-external', { url }),
  showItemInFolder: (path) => record('show-item-in-folder', { path }),
};

export const dialog = {
  // Synchronous and usable before 'ready' on Linux and Windows (Electron's docs).
  showErrorBox: (title, content) => record('error-box', { title, content }),
};

export class Notification extends EventEmitter {
  static isSupported() {
    return true;
  }
  constructor(options = {}) {
    super();
    this.title = options.title ?? '';
    this.body = options.body ?? '';
  }
  show() {
    record('notification', { title: this.title, body: this.body });
    notifications.push(this);
  }
  close() {}
}
const notifications = [];

// ---------------------------------------------------------------------------------------------
// Menu and Tray.

class MenuItem {
  constructor(options) {
    const type = options.type ?? (options.submenu ? 'submenu' : 'normal');
    if (!['normal', 'separator', 'submenu', 'checkbox', 'radio'].includes(type)) throw new Error(`Unknown menu item type: ${type}`);
    if (type !== 'separator' && options.label === undefined && options.role === undefined) throw new Error('Invalid template for MenuItem: must have at least one of label, role or type');
    this.type = type;
    this.label = options.label ?? '';
    this.enabled = options.enabled ?? true;
    this.visible = options.visible ?? true;
    this.checked = options.checked ?? false;
    this.toolTip = options.toolTip ?? '';
    this.click = options.click;
    this.submenu = type === 'submenu' ? (options.submenu instanceof Menu ? options.submenu : Menu.buildFromTemplate(options.submenu ?? [])) : undefined;
  }
}

export class Menu {
  items = [];
  static buildFromTemplate(template) {
    const menu = new Menu();
    for (const options of template) menu.items.push(new MenuItem(options));
    return menu;
  }
  static setApplicationMenu(menu) {
    record('application-menu', { menu: menu === null ? null : describeMenu(menu) });
  }
}

/** A menu as data: what a person sees in it. */
function describeMenu(menu) {
  return menu.items.map((item) => ({
    type: item.type,
    label: item.label,
    enabled: item.enabled,
    checked: item.checked,
    ...(item.submenu ? { submenu: describeMenu(item.submenu) } : {}),
  }));
}

let tray = null;

export class Tray extends EventEmitter {
  #menu = null;
  #destroyed = false;
  constructor(image) {
    super();
    requireReady('Tray');
    // Simulated: a desktop where the tray cannot be made. Electron's own failures here are OS
    // specific (README.md); the app must exit non-zero, saying why, whatever the cause.
    if (process.env.ELECTRON_STAND_IN_FAIL_TRAY === '1') throw new Error('Failed to create the tray icon (the stand-in was told to fail: ELECTRON_STAND_IN_FAIL_TRAY=1)');
    record('tray-created', { image: imagePath(image) });
    tray = this;
  }
  setContextMenu(menu) {
    this.#menu = menu;
    record('tray-menu', { menu: menu === null ? null : describeMenu(menu) });
  }
  setImage(image) {
    record('tray-image', { image: imagePath(image) });
  }
  setToolTip(text) {
    record('tray-tooltip', { text });
  }
  destroy() {
    this.#destroyed = true;
    record('tray-destroyed');
  }
  isDestroyed() {
    return this.#destroyed;
  }
  get contextMenu() {
    return this.#menu;
  }
}

function imagePath(image) {
  return typeof image === 'string' ? image : image.path;
}

// ---------------------------------------------------------------------------------------------
// BrowserWindow and webContents.

const windows = new Set();
let nextWebContentsId = 1;
const allWebContents = new Map();

class WebContents extends EventEmitter {
  #destroyed = false;
  #url = '';
  #openHandler = null;
  constructor(window) {
    super();
    this.id = nextWebContentsId++;
    this.window = window;
    allWebContents.set(this.id, this);
  }
  get mainFrame() {
    return { url: this.#url, name: '', top: null, parent: null, routingId: 1, processId: 1 };
  }
  getURL() {
    return this.#url;
  }
  send(channel, ...args) {
    if (this.#destroyed) throw new Error('Object has been destroyed');
    const first = args[0];
    record('push', { webContents: this.id, channel, type: first !== null && typeof first === 'object' ? first.type : undefined });
  }
  setWindowOpenHandler(handler) {
    this.#openHandler = handler;
  }
  windowOpen(url) {
    return this.#openHandler === null ? { action: 'allow' } : this.#openHandler({ url, frameName: '', features: '', disposition: 'new-window', referrer: { url: this.#url, policy: 'no-referrer' } });
  }
  isDestroyed() {
    return this.#destroyed;
  }
  destroy() {
    this.#destroyed = true;
    allWebContents.delete(this.id);
  }
  setUrl(url) {
    this.#url = url;
  }
}

export class BrowserWindow extends EventEmitter {
  static #nextId = 1;
  #destroyed = false;
  #visible = false;
  static getAllWindows() {
    return [...windows];
  }
  static fromWebContents(contents) {
    return [...windows].find((window) => window.webContents === contents) ?? null;
  }
  constructor(options = {}) {
    super();
    requireReady('BrowserWindow');
    this.id = BrowserWindow.#nextId++;
    this.options = options;
    this.webContents = new WebContents(this);
    windows.add(this);
    this.#visible = options.show !== false;
    const { webPreferences = {}, ...rest } = options;
    record('window-created', { window: this.id, webContents: this.webContents.id, options: rest, webPreferences: resolvedWebPreferences(webPreferences) });
  }
  /** Electron loads the page; here the registered protocol (or the file) answers it and its module scripts and styles, as Chromium would fetch them. */
  async loadURL(url) {
    const page = await fetchForPage(url);
    this.webContents.setUrl(url);
    const subresources = [];
    if (page.ok && /^text\/html\b/.test(page.contentType)) {
      for (const ref of referencedResources(page.text)) {
        const target = new URL(ref.src, url).href;
        const answer = await fetchForPage(target);
        subresources.push({ url: target, kind: ref.kind, status: answer.status, contentType: answer.contentType, accepted: acceptedAs(ref.kind, answer) });
      }
    }
    record('page-load', { window: this.id, url, status: page.status, contentType: page.contentType, csp: page.csp, subresources });
    this.webContents.emit('did-finish-load');
  }
  show() {
    this.#visible = true;
    record('window-show', { window: this.id });
  }
  hide() {
    this.#visible = false;
    record('window-hide', { window: this.id });
  }
  focus() {}
  isVisible() {
    return this.#visible;
  }
  isMinimized() {
    return false;
  }
  restore() {}
  isDestroyed() {
    return this.#destroyed;
  }
  close() {
    if (this.#destroyed) return;
    const event = makeEvent();
    this.emit('close', event);
    if (event.defaultPrevented) return;
    this.destroy();
  }
  destroy() {
    if (this.#destroyed) return;
    this.#destroyed = true;
    windows.delete(this);
    this.webContents.destroy();
    record('window-closed', { window: this.id });
    this.emit('closed');
    if (windows.size === 0 && !exiting) {
      // Electron: without a listener, closing the last window quits the app.
      if (app.listenerCount('window-all-closed') === 0) app.quit();
      else app.emit('window-all-closed');
    }
  }
}

/** webPreferences as Electron resolves them (its defaults for what the app leaves out). */
function resolvedWebPreferences(given) {
  return { contextIsolation: true, sandbox: true, nodeIntegration: false, nodeIntegrationInSubFrames: false, webviewTag: false, webSecurity: true, ...given };
}

/** `<script type="module" src>` and `<link rel="stylesheet" href>` of a page. */
function referencedResources(html) {
  const refs = [];
  for (const tag of html.match(/<script\b[^>]*>/g) ?? []) {
    const src = /\bsrc="([^"]+)"/.exec(tag);
    if (src) refs.push({ kind: /\btype="module"/.test(tag) ? 'module-script' : 'script', src: src[1] });
  }
  for (const tag of html.match(/<link\b[^>]*>/g) ?? []) {
    const href = /\bhref="([^"]+)"/.exec(tag);
    if (href && /\brel="stylesheet"/.test(tag)) refs.push({ kind: 'stylesheet', src: href[1] });
  }
  return refs;
}

/** Chromium's strict MIME checks: a module script needs a JavaScript type, a stylesheet text/css (with nosniff, any script does). */
function acceptedAs(kind, answer) {
  if (!answer.ok) return false;
  if (kind === 'stylesheet') return /^text\/css\b/.test(answer.contentType);
  return /^(text|application)\/(javascript|ecmascript|x-javascript)\b/.test(answer.contentType);
}

async function fetchForPage(url) {
  let response;
  try {
    response = await routeRequest(new Request(url));
  } catch (error) {
    return { ok: false, status: 0, contentType: '', csp: null, text: '', error: String(error) };
  }
  const text = await response.text();
  return { ok: response.ok, status: response.status, contentType: response.headers.get('content-type') ?? '', csp: response.headers.get('content-security-policy'), text };
}

// ---------------------------------------------------------------------------------------------
// protocol, net, session, powerMonitor, ipcMain.

const privilegedSchemes = new Map();
const protocolHandlers = new Map();

export const protocol = {
  registerSchemesAsPrivileged(schemes) {
    if (isReady) throw new Error('protocol.registerSchemesAsPrivileged should be called before app is ready');
    for (const scheme of schemes) privilegedSchemes.set(scheme.scheme, scheme.privileges ?? {});
    record('schemes-privileged', { schemes });
  },
  handle(scheme, handler) {
    requireReady('protocol.handle');
    if (protocolHandlers.has(scheme)) throw new Error(`Failed to register protocol: ${scheme}`);
    protocolHandlers.set(scheme, handler);
    record('protocol-handle', { scheme, privileges: privilegedSchemes.get(scheme) ?? null });
  },
  unhandle(scheme) {
    protocolHandlers.delete(scheme);
  },
  isProtocolHandled(scheme) {
    return protocolHandlers.has(scheme);
  },
};

/** A request as Chromium routes it: a handled custom scheme to its handler, file: and http(s) to the network stack. */
async function routeRequest(request) {
  const scheme = new URL(request.url).protocol.slice(0, -1);
  const handler = protocolHandlers.get(scheme);
  if (handler) return handler(request);
  return net.fetch(request.url);
}

export const net = {
  /**
   * Assumed (README.md): a file: response carries the file's bytes and no Content-Type, the case
   * in which a page's module scripts are refused unless the protocol handler sets one.
   */
  async fetch(input, init) {
    const url = typeof input === 'string' ? input : input.url;
    if (url.startsWith('file:')) {
      const bytes = await readFile(fileURLToPath(url)).catch(() => {
        throw new TypeError('net::ERR_FILE_NOT_FOUND');
      });
      return new Response(bytes, { status: 200 });
    }
    return fetch(input, init);
  },
};

let permissionRequestHandler = null;
let permissionCheckHandler = null;
export const session = {
  get defaultSession() {
    requireReady('session');
    return {
      setPermissionRequestHandler: (handler) => (permissionRequestHandler = handler),
      setPermissionCheckHandler: (handler) => (permissionCheckHandler = handler),
    };
  },
};

class PowerMonitor extends EventEmitter {
  on(event, listener) {
    requireReady('powerMonitor');
    return super.on(event, listener);
  }
}
export const powerMonitor = new PowerMonitor();

const invokeHandlers = new Map();
class IpcMain extends EventEmitter {
  handle(channel, listener) {
    if (invokeHandlers.has(channel)) throw new Error(`Attempted to register a second handler for '${channel}'`);
    invokeHandlers.set(channel, listener);
  }
  handleOnce(channel, listener) {
    this.handle(channel, (...args) => {
      invokeHandlers.delete(channel);
      return listener(...args);
    });
  }
  removeHandler(channel) {
    invokeHandlers.delete(channel);
  }
}
export const ipcMain = new IpcMain();

/**
 * ipcRenderer.invoke as the page's preload sees it. Electron runs the handler with the event,
 * sends back { result } (structured-cloned) or { error: String(error) }, and the renderer
 * rejects with `Error invoking remote method '<channel>': <that string>`.
 */
async function invokeFromRenderer(channel, args, sender) {
  const event = { type: 'frame', sender: sender.webContents, senderFrame: sender.frame, frameId: 1, processId: 1, returnValue: undefined };
  const handler = invokeHandlers.get(channel);
  let reply;
  if (!handler) {
    reply = { error: `Error: No handler registered for '${channel}'` };
  } else {
    try {
      reply = { result: structuredClone(await handler(event, ...structuredClone(args))) };
    } catch (error) {
      reply = { error: String(error) };
    }
  }
  if ('error' in reply) return { rejected: `Error invoking remote method '${channel}': ${reply.error}` };
  return { resolved: reply.result };
}

// Renderer-only modules: main must not use them.
export const contextBridge = undefined;
export const ipcRenderer = undefined;

// ---------------------------------------------------------------------------------------------
// The test's controls, over the Node IPC channel: { id, op, ... } → { id, ok, value | error }.

function dashboardWindow() {
  return [...windows].find((window) => window.webContents.getURL().startsWith('llmtray://')) ?? [...windows][0] ?? null;
}

/** The sender of an invoke: the dashboard window's main frame, or one of the frames the app must refuse. */
function senderFor(kind) {
  const window = dashboardWindow();
  if (kind === 'foreign') {
    const contents = new WebContents(null);
    contents.setUrl('llmtray://dashboard/index.html');
    return { webContents: contents, frame: contents.mainFrame };
  }
  if (window === null) throw new Error('no window is open');
  const contents = window.webContents;
  switch (kind) {
    case 'dashboard':
      return { webContents: contents, frame: contents.mainFrame };
    case 'file-frame':
      return { webContents: contents, frame: { ...contents.mainFrame, url: `file://${join(appPath, 'dist', 'renderer', 'index.html')}` } };
    case 'lookalike-frame':
      return { webContents: contents, frame: { ...contents.mainFrame, url: 'llmtray://dashboard.evil.example/index.html' } };
    case 'destroyed-frame':
      return { webContents: contents, frame: null };
    default:
      throw new Error(`unknown sender kind ${kind}`);
  }
}

/** The item a label path names in the tray's menu; each step matches a label's start. */
function menuItemAt(path) {
  let items = tray?.contextMenu?.items ?? [];
  let item = null;
  for (const step of path) {
    item = items.find((candidate) => candidate.label.startsWith(step)) ?? null;
    if (item === null) throw new Error(`no menu item starting '${step}' among: ${items.map((i) => i.label).join(' | ')}`);
    items = item.submenu?.items ?? [];
  }
  return item;
}

const controls = {
  click({ path }) {
    const item = menuItemAt(path);
    if (!item.enabled) throw new Error(`'${item.label}' is disabled`);
    // Electron flips a checkbox before calling click.
    if (item.type === 'checkbox') item.checked = !item.checked;
    record('menu-click', { path, label: item.label });
    item.click?.(item, BrowserWindow.getAllWindows()[0], { triggeredByAccelerator: false });
    return { label: item.label };
  },
  'tray-click'() {
    if (tray === null) throw new Error('no tray');
    tray.emit('click', makeEvent(), { x: 0, y: 0, width: 22, height: 22 });
    return null;
  },
  invoke({ channel, args, sender }) {
    return invokeFromRenderer(channel, args, senderFor(sender));
  },
  async fetch({ url }) {
    const response = await routeRequest(new Request(url));
    const body = Buffer.from(await response.arrayBuffer());
    return { status: response.status, headers: Object.fromEntries(response.headers), bodyLength: body.length, bodyStart: body.subarray(0, 200).toString('utf8') };
  },
  navigate({ url }) {
    const window = dashboardWindow();
    if (window === null) throw new Error('no window is open');
    const event = makeEvent({ url, isMainFrame: true, frame: window.webContents.mainFrame });
    window.webContents.emit('will-navigate', event, url);
    return { prevented: event.defaultPrevented };
  },
  'open-window'({ url }) {
    const window = dashboardWindow();
    if (window === null) throw new Error('no window is open');
    return window.webContents.windowOpen(url);
  },
  'attach-webview'() {
    const window = dashboardWindow();
    const event = makeEvent();
    window.webContents.emit('will-attach-webview', event, {}, {});
    return { prevented: event.defaultPrevented };
  },
  'close-window'() {
    dashboardWindow()?.close();
    return { open: dashboardWindow() !== null, visible: dashboardWindow()?.isVisible() ?? false };
  },
  permission({ permission }) {
    if (permissionRequestHandler === null || permissionCheckHandler === null) throw new Error('no permission handlers were set');
    return new Promise((resolve) => {
      permissionRequestHandler(dashboardWindow()?.webContents ?? null, permission, (granted) =>
        resolve({ requested: granted, checked: permissionCheckHandler(dashboardWindow()?.webContents ?? null, permission, 'llmtray://dashboard', {}) }),
      );
    });
  },
  'power-shutdown'() {
    const event = makeEvent();
    powerMonitor.emit('shutdown', event);
    return { prevented: event.defaultPrevented };
  },
  quit() {
    app.quit();
    return null;
  },
  'click-notification'({ index }) {
    notifications[index].emit('click', makeEvent());
    return null;
  },
};

if (typeof process.send === 'function') {
  process.on('message', (message) => {
    const control = controls[message.op];
    Promise.resolve()
      .then(() => {
        if (!control) throw new Error(`unknown control ${message.op}`);
        return control(message);
      })
      .then(
        (value) => process.send?.({ id: message.id, ok: true, value }),
        (error) => process.send?.({ id: message.id, ok: false, error: error instanceof Error ? error.message : String(error) }),
      );
  });
}

// Electron's message loop: the process runs until app.quit() or app.exit() ends it, whatever else keeps Node busy.
setInterval(() => {}, 1 << 30);

export default { app, BrowserWindow, clipboard, dialog, ipcMain, Menu, nativeImage, nativeTheme, net, Notification, powerMonitor, protocol, session, shell, Tray };
