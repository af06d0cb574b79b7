// "Start at Login", per platform.
//
// macOS and Windows have an OS setting that Electron's app.setLoginItemSettings writes. Linux
// has none that Electron supports; the freedesktop way is a .desktop file in
// $XDG_CONFIG_HOME/autostart, which GNOME, KDE, Xfce and others all read. The file names the
// command to run, which for an AppImage must be the AppImage file itself ($APPIMAGE), not the
// executable inside its temporary mount that process.execPath points at.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DAEMON_JS_FLAGS_SWITCH } from './launch-mode.js';
import { errorMessage } from '../core/contracts/error-message.js';

/** The parts of Electron's app used on macOS and Windows. */
export interface LoginItemApp {
  getLoginItemSettings(): { openAtLogin: boolean };
  setLoginItemSettings(settings: { openAtLogin: boolean; args?: string[] }): void;
}

export interface LaunchCommand {
  command: string;
  args: string[];
}

export interface LoginItem {
  /** Whether the app is set to start at login. Blocks on a stat (Linux) or an OS call. */
  get(): boolean;
  /** Sets it; idempotent. Throws when the autostart file cannot be written, naming it. */
  set(enabled: boolean): void;
}

/**
 * The command that starts this app again: the AppImage, the packaged binary, or electron with the
 * app folder; each with the daemon's V8 flags, which only a command line gives the main process.
 * (An AppImage passes its arguments on to the binary inside.)
 */
export function relaunchCommand(options: { execPath: string; isPackaged: boolean; appPath: string; appImage: string | undefined }): LaunchCommand {
  if (options.appImage) return { command: options.appImage, args: [DAEMON_JS_FLAGS_SWITCH] };
  return { command: options.execPath, args: options.isPackaged ? [DAEMON_JS_FLAGS_SWITCH] : [DAEMON_JS_FLAGS_SWITCH, options.appPath] };
}

export function createLoginItem(options: {
  platform: NodeJS.Platform;
  app: LoginItemApp;
  /** $XDG_CONFIG_HOME/autostart, or ~/.config/autostart. */
  autostartDir: string;
  command: LaunchCommand;
}): LoginItem {
  if (options.platform !== 'linux') {
    return {
      get: () => options.app.getLoginItemSettings().openAtLogin,
      set: (enabled) => options.app.setLoginItemSettings({ openAtLogin: enabled, args: options.command.args }),
    };
  }
  const file = join(options.autostartDir, 'llmtray.desktop');
  return {
    get: () => existsSync(file),
    set: (enabled) => {
      try {
        if (!enabled) {
          rmSync(file, { force: true });
          return;
        }
        mkdirSync(options.autostartDir, { recursive: true });
        writeFileSync(file, linuxAutostartEntry(options.command));
      } catch (error) {
        throw new Error(`could not ${enabled ? 'write' : 'remove'} ${file}: ${errorMessage(error)}`);
      }
    },
  };
}

/** A freedesktop autostart entry that runs `command`. */
export function linuxAutostartEntry(command: LaunchCommand): string {
  const exec = [command.command, ...command.args].map(desktopExecArgument).join(' ');
  return [
    '[Desktop Entry]',
    'Type=Application',
    'Name=llmtray',
    'Comment=Keeps local LLMs resident in GPU memory and serves them on one endpoint',
    `Exec=${exec}`,
    'Terminal=false',
    'X-GNOME-Autostart-enabled=true',
    '',
  ].join('\n');
}

/**
 * One Exec argument, quoted per the Desktop Entry spec: inside double quotes, `"`, `` ` ``, `$`
 * and `\` take a backslash; then the whole value is a key-file string, where a backslash is
 * written twice; a literal `%` is `%%` (a lone one would be a field code).
 */
function desktopExecArgument(argument: string): string {
  const quoted = `"${argument.replace(/["`$\\]/g, '\\$&')}"`;
  return quoted.replace(/\\/g, '\\\\').replace(/%/g, '%%');
}
