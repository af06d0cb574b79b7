// The Electron main process: the composition root of the desktop app.
//
// Everything that decides something lives in the pure modules next to this file (menu content,
// icon state, IPC validation, sender checks, notifications, quit sequencing, URL rules) and is
// unit-tested without Electron; this file only wires them to Electron's objects, so reading it
// top to bottom is the whole lifecycle: one instance, start the daemon, show the tray, open the
// dashboard on demand, stop every engine before exiting.
//
// The daemon comes from core/daemon.js, loaded at run time (see loadStartDaemon). The main
// process itself never loads node-llama-cpp: only the engine child processes do, run by
// Electron's own Node (ENGINE_ENV), so the app has no native module of its own.
import {
  app,
  BrowserWindow,
  clipboard,
  dialog,
  ipcMain,
  Menu,
  nativeImage,
  nativeTheme,
  net,
  Notification,
  powerMonitor,
  protocol,
  session,
  shell,
  Tray,
} from 'electron';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { contentTypeFor, DASHBOARD_CSP } from '../core/admin/static-files.js';
import { currentPlatform, dataDir as defaultDataDir } from '../core/catalog/paths.js';
import { realClock } from '../core/common/clock.js';
import { createThrottle } from '../core/common/throttle.js';
import type { Snapshot } from '../core/contracts/snapshot.js';
import { assertNever } from '../core/contracts/assert-never.js';
import type { DesktopDaemon, StartDaemon } from './daemon-port.js';
import { forwardAdminEvents, registerIpcHandlers } from './ipc-main-handlers.js';
import { createClockWordsTicker } from './clock-words-ticker.js';
import { desktopSettings, makeUserDataDir, type DesktopSettings } from './desktop-settings.js';
import { FLAGS_RELAUNCH_MARKER, flagsRelaunch } from './flags-relaunch.js';
import { createLoginItem, relaunchCommand } from './login-item.js';
import { toMenuTemplate } from './menu-template.js';
import { notificationFor, type NotificationText } from './notifications.js';
import { createQuitCoordinator } from './quit-coordinator.js';
import { trayIconDir, trayIconFile } from './tray-icons.js';
import { buildTrayMenu, STARTING_TOOLTIP, startingTrayMenu, trayStatus, type TrayActions, type TrayHealth } from './tray-menu.js';
import { createTrayView } from './tray-view.js';
import {
  DASHBOARD_INDEX_URL,
  DASHBOARD_SCHEME,
  dashboardSenderCheck,
  isDashboardUrl,
  isExternalHttpUrl,
  resolveDashboardFile,
} from './window-security.js';
import { errorMessage } from '../core/contracts/error-message.js';

/** dist/electron; the renderer is built to dist/renderer next to it. */
const here = dirname(fileURLToPath(import.meta.url));
const RENDERER_DIR = join(here, '..', 'renderer');
const PRELOAD = join(here, 'preload.cjs');
/** At most this often the native menu is rebuilt while snapshots stream in: a load's progress moves at most once a second. */
const MENU_REBUILD_INTERVAL_MS = 1_000;
/** Windows groups notifications and taskbar entries by it; electron-builder's appId, which the installer registers. */
const APP_USER_MODEL_ID = 'dev.llmtray.app';
/** Longest wait for the engines to stop on quit; the supervisor's own SIGKILL comes well before. */
const QUIT_GRACE_MS = 20_000;


/**
 * The engines' extra environment. The daemon runs the embedded engine under
 * `process.execPath`, which here is the Electron binary: without ELECTRON_RUN_AS_NODE=1 each
 * engine would open a second app (and a second tray icon). Setting it on our own process.env
 * instead was rejected: every child would inherit it, including anything the app relaunches.
 */
const ENGINE_ENV: Readonly<Record<string, string>> = { ELECTRON_RUN_AS_NODE: '1' };

/**
 * The daemon's composition root, loaded when the app starts (a dynamic import, so the window
 * and tray code load first). It keeps the same data dir and config as `llmtray serve`, so
 * `llmtray status` and friends talk to the desktop app too.
 */
async function loadStartDaemon(): Promise<StartDaemon> {
  const { startDaemon } = await import('../core/daemon.js');
  return (options) =>
    startDaemon({
      demo: options.demo,
      dataDir: options.dataDir,
      ...(options.port === undefined ? {} : { port: options.port }),
      engineEnv: { ...ENGINE_ENV },
      // Its refusals (port taken, another llmtray on the data dir) end in an error box: advice for the app's user, not CLI flags.
      face: 'desktop',
    });
}

// Settings that cannot be read, or a data dir that cannot be made, end here with one box and
// exit 1, as every other start-up failure does: a throw at this top level would leave Electron
// running with no tray and no window.
const settings = desktopSettingsOrRefusal();
if (settings !== null) start(settings);

function desktopSettingsOrRefusal(): DesktopSettings | null {
  let problem: string | null;
  let settings: DesktopSettings | null = null;
  try {
    settings = desktopSettings(process.env, defaultDataDir(currentPlatform()));
    // Before anything reads a path, and before the single-instance lock, which Chromium keeps in
    // userData: the lock is then per data dir, as the daemon's own is.
    problem = makeUserDataDir(settings.userDataDir);
  } catch (error) {
    problem = errorMessage(error);
  }
  if (problem === null) return settings;
  const refusal = problem;
  console.error(`llmtray: ${refusal}`);
  void app.whenReady().then(() => {
    dialog.showErrorBox('llmtray could not start', refusal);
    app.exit(1);
  });
  return null;
}

function start(settings: DesktopSettings): void {
  app.setPath('userData', settings.userDataDir);
  if (process.platform === 'win32') app.setAppUserModelId(APP_USER_MODEL_ID);

  // Must happen before 'ready': only a standard, secure scheme gets an origin of its own.
  protocol.registerSchemesAsPrivileged([
    { scheme: DASHBOARD_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } },
  ]);

  // Before the lock and before anything shows: an app started from Finder, the Dock or the Start
  // menu has no --js-flags, and only a command line gives them to this process's V8.
  const relaunch = flagsRelaunch({ jsFlags: app.commandLine.getSwitchValue('js-flags'), argv: process.argv, env: process.env });
  delete process.env[FLAGS_RELAUNCH_MARKER];
  if (relaunch.kind === 'relaunch') {
    // The relaunched app inherits this environment; the marker stops a second round. An AppImage
    // is started again as the AppImage: execPath lies in its mount, which ends with this process.
    process.env[FLAGS_RELAUNCH_MARKER] = '1';
    app.relaunch({ args: relaunch.args, ...(process.env.APPIMAGE ? { execPath: process.env.APPIMAGE } : {}) });
    app.exit(0);
  } else if (!app.requestSingleInstanceLock()) {
    // Another llmtray owns the tray, the port and the engines; it shows its dashboard instead.
    app.exit(0);
  } else {
    if (relaunch.kind === 'give-up') console.error(`llmtray: ${relaunch.warning}`);
    run(settings);
  }
}

function run(settings: DesktopSettings): void {
  let dashboard: BrowserWindow | null = null;
  const liveDashboard = (): BrowserWindow | null => (dashboard !== null && !dashboard.isDestroyed() ? dashboard : null);

  let daemon: DesktopDaemon | null = null;
  let stopListening: () => void = () => {};
  const daemonStarting = app.whenReady().then(async () => {
    const startDaemon = await loadStartDaemon();
    return startDaemon({ demo: process.argv.includes('--demo'), dataDir: settings.dataDir, ...(settings.port === undefined ? {} : { port: settings.port }) });
  });
  // Handled here too: a start-up that fails before awaiting it (no tray) must not leave this
  // rejection unhandled; startUp reports it when it awaits it.
  daemonStarting.catch(() => undefined);

  const quit = createQuitCoordinator({
    stop: async () => {
      stopListening();
      const started = await daemonStarting.catch(() => null);
      await started?.stop();
    },
    exit: (code) => app.exit(code),
    clock: realClock,
    graceMs: QUIT_GRACE_MS,
    log: (message) => console.error(message),
  });
  app.on('before-quit', (event) => quit.onBeforeQuit(event));
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => app.quit());
  app.on('second-instance', () => showDashboard());
  // The app lives in the tray: closing the last window must not quit it.
  app.on('window-all-closed', () => {});

  function showDashboard(): void {
    const window = liveDashboard() ?? createDashboardWindow();
    dashboard = window;
    if (window.isMinimized()) window.restore();
    window.show();
    window.focus();
  }

  function createDashboardWindow(): BrowserWindow {
    const window = new BrowserWindow({
      width: 900,
      height: 600,
      show: false,
      title: 'llmtray',
      autoHideMenuBar: true,
      webPreferences: {
        preload: PRELOAD,
        contextIsolation: true,
        sandbox: true,
        nodeIntegration: false,
        webviewTag: false,
        spellcheck: false,
      },
    });
    // Closing hides: the app, its tray and its engines keep running until Quit.
    window.on('close', (event) => {
      if (!quit.quitting) {
        event.preventDefault();
        window.hide();
      }
    });
    window.webContents.on('will-navigate', (event) => {
      if (isDashboardUrl(event.url)) return;
      event.preventDefault();
      if (isExternalHttpUrl(event.url)) openExternal(event.url);
    });
    window.webContents.setWindowOpenHandler(({ url }) => {
      if (isExternalHttpUrl(url)) openExternal(url);
      return { action: 'deny' };
    });
    window.webContents.on('will-attach-webview', (event) => event.preventDefault());
    // A failed load shows Electron's error page in the window; the log says why.
    window.loadURL(DASHBOARD_INDEX_URL).catch((error: unknown) => console.error(`llmtray: the dashboard did not load: ${String(error)}`));
    return window;
  }

  function notify(text: NotificationText | null): void {
    if (text === null || !Notification.isSupported()) return;
    const notification = new Notification({ title: text.title, body: text.body });
    notification.on('click', () => showDashboard());
    notification.show();
  }

  // A throw anywhere in start-up (a tray that cannot be made, the daemon refusing, a bug) would
  // otherwise be an unhandled rejection that leaves a process with no tray and engines nobody
  // stops. Say why, and quit the usual way, which stops the engines first, with exit code 1.
  startUp().catch((error: unknown) => {
    console.error(`llmtray: the desktop app failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    if (app.isReady()) dialog.showErrorBox(daemon === null ? 'llmtray could not start' : 'llmtray stopped', errorMessage(error));
    quit.markFailed();
    app.quit();
  });

  async function startUp(): Promise<void> {
    await app.whenReady();
    if (process.platform === 'darwin') app.dock?.hide();
    serveDashboardFiles();
    session.defaultSession.setPermissionRequestHandler((_contents, _permission, callback) => callback(false));
    session.defaultSession.setPermissionCheckHandler(() => false);

    // The icon at once, saying it is starting: the daemon takes seconds (the demo generates its models first).
    const iconDir = trayIconDir({ isPackaged: app.isPackaged, resourcesPath: process.resourcesPath, appPath: app.getAppPath() });
    const iconFile = (health: TrayHealth): string =>
      join(iconDir, trayIconFile({ platform: process.platform, health, panelIsDark: nativeTheme.shouldUseDarkColors }));
    const tray = new Tray(nativeImage.createFromPath(iconFile('loading')));
    tray.on('click', () => showDashboard());
    const trayView = createTrayView(
      tray,
      { menu: (template) => Menu.buildFromTemplate(template), image: (file) => nativeImage.createFromPath(file) },
      iconFile('loading'),
    );
    trayView.show({ template: toMenuTemplate(startingTrayMenu({ quit: () => app.quit() }), process.platform), iconFile: iconFile('loading'), tooltip: STARTING_TOOLTIP });

    daemon = await daemonStarting;
    const admin = daemon.admin;

    const loginItem = createLoginItem({
      platform: process.platform,
      app,
      autostartDir: join(process.env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'autostart'),
      command: relaunchCommand({ execPath: process.execPath, isPackaged: app.isPackaged, appPath: app.getAppPath(), appImage: process.env.APPIMAGE }),
    });

    const actions: TrayActions = {
      copyText: (text) => clipboard.writeText(text),
      runCommand: (command, modelId) => {
        admin
          .runCommand({ id: modelId, command })
          .then((result) => {
            if (result.ok) return;
            notify({ title: `Could not ${command} ${modelId}`, body: result.message });
            // A Pinned checkbox toggled itself when clicked: the unchanged snapshot's check goes back on.
            trayView.invalidate();
            menu.request();
          })
          .catch((error: unknown) => console.error(`llmtray: ${command} ${modelId} failed: ${String(error)}`));
      },
      openDashboard: () => showDashboard(),
      cancelPull: (id) => {
        admin.cancelPull({ name: id }).catch((error: unknown) => notify({ title: `Could not cancel the pull of ${id}`, body: errorMessage(error) }));
      },
      setStartAtLogin: (enabled) => {
        try {
          loginItem.set(enabled);
        } catch (error) {
          notify({ title: 'Could not change Start at Login', body: errorMessage(error) });
        }
        menu.request();
      },
      quit: () => app.quit(),
    };

    let latest: Snapshot = await admin.getSnapshot();
    // The pulls as their events tell them, by id: the running ones are in the tooltip and the menu.
    const pulls = new Map((await admin.listPulls()).map((pull) => [pull.id, pull]));
    const menu = createThrottle(
      () => {
        const items = buildTrayMenu(latest, actions, { startAtLogin: loginItem.get(), now: Date.now(), pulls: [...pulls.values()] });
        const status = trayStatus(latest, [...pulls.values()]);
        trayView.show({ template: toMenuTemplate(items, process.platform), iconFile: iconFile(status.health), tooltip: status.tooltip });
      },
      MENU_REBUILD_INTERVAL_MS,
      realClock,
    );
    nativeTheme.on('updated', () => menu.request());
    // A load's seconds and estimated percent, and a retry's countdown, move though no snapshot comes (clock-words-ticker.ts).
    const clockTicks = createClockWordsTicker(() => menu.request(), realClock);

    const forward = forwardAdminEvents(() => liveDashboard()?.webContents ?? null);
    const unsubscribe = admin.subscribe((event) => {
      forward(event);
      switch (event.type) {
        case 'SnapshotUpdated':
          latest = event.snapshot;
          clockTicks.follow(latest);
          menu.request();
          break;
        case 'PullProgressed':
          pulls.set(event.pull.id, event.pull);
          menu.request();
          notify(notificationFor(event));
          break;
        case 'ModelQuarantined':
        case 'ModelFellBack':
          notify(notificationFor(event));
          break;
        case 'LogAppended':
        case 'RequestRecorded':
          break;
        default:
          assertNever(event);
      }
    });
    const unregisterIpc = registerIpcHandlers({
      ipcMain,
      admin,
      isTrustedSender: dashboardSenderCheck(() => liveDashboard()?.webContents.id ?? null),
    });
    stopListening = () => {
      unsubscribe();
      unregisterIpc();
      clockTicks.stop();
      menu.cancel();
    };
    // Logout and shutdown on Linux and macOS: hold the OS until the engines are down. Electron
    // passes an event with preventDefault here although its typings declare no argument.
    const onShutdown = (event?: { preventDefault(): void }): void => {
      event?.preventDefault();
      app.quit();
    };
    powerMonitor.on('shutdown', onShutdown);
    menu.request();
    console.log(`llmtray: serving ${daemon.endpoint}; the dashboard is in the tray menu (and at ${daemon.dashboardUrl})`);
  }
}

/** Opens a link in the person's browser; a failure (no browser configured) is a log line, not a crash. */
function openExternal(url: string): void {
  shell.openExternal(url).catch((error: unknown) => console.error(`llmtray: could not open ${url}: ${String(error)}`));
}

/**
 * Serves dist/renderer on llmtray://dashboard/ with the same CSP as the headless server, so
 * the dashboard runs under one policy whichever way it is opened.
 */
function serveDashboardFiles(): void {
  protocol.handle(DASHBOARD_SCHEME, async (request) => {
    const file = resolveDashboardFile(RENDERER_DIR, request.url);
    const text = (status: number, body: string): Response =>
      new Response(body, { status, headers: { 'content-type': 'text/plain; charset=utf-8' } });
    if (!file.ok) return text(file.status, file.reason);
    let upstream: Response;
    try {
      upstream = await net.fetch(pathToFileURL(file.path).href);
    } catch {
      return text(404, `${file.path} does not exist; build the dashboard with npm run build`);
    }
    const headers = new Headers(upstream.headers);
    // Chromium's file: responses need not carry a type, and a module script without a JavaScript one is refused (a blank window).
    headers.set('content-type', contentTypeFor(file.path));
    headers.set('content-security-policy', DASHBOARD_CSP);
    headers.set('x-content-type-options', 'nosniff');
    headers.set('referrer-policy', 'no-referrer');
    return new Response(upstream.body, { status: upstream.status, headers });
  });
}
