// Puts the tray's menu, icon and tooltip on the native tray, each only when it changed.
//
// Rebuilding a native menu is not free, and on Linux it re-exports the whole menu over D-Bus,
// which tray hosts redraw (flicker): during one load the menu was rebuilt 28 times in 9 s though
// most snapshots changed nothing it shows (the memory picture, a log line). So the menu is set
// only when a line of it differs from what is shown, and the icon and tooltip likewise.
import type { MenuItemConstructorOptions } from 'electron';

/** The parts of Electron's Tray used here. */
export interface TrayLike<Menu, Image> {
  setContextMenu(menu: Menu): void;
  setImage(image: Image): void;
  setToolTip(text: string): void;
}

export interface TrayView {
  /** Shows this menu, icon file and tooltip, setting on the tray only what differs from what it shows. */
  show(view: { template: MenuItemConstructorOptions[]; iconFile: string; tooltip: string }): void;
  /**
   * Forgets what the native menu shows, so the next show sets it. After a click on a checkbox:
   * the native item toggled itself, and if the command did not take, the same template must be
   * set again to put the check back.
   */
  invalidate(): void;
}

/** `iconFile`: the icon the tray was created with, so the first show does not set it again. */
export function createTrayView<Menu, Image>(
  tray: TrayLike<Menu, Image>,
  build: { menu: (template: MenuItemConstructorOptions[]) => Menu; image: (file: string) => Image },
  iconFile = '',
): TrayView {
  let shown = { menu: '', iconFile, tooltip: '' };
  return {
    show({ template, iconFile, tooltip }) {
      // A template's lines as data: labels, states, submenus (JSON drops the click functions, which follow from them).
      const menu = JSON.stringify(template);
      if (menu !== shown.menu) tray.setContextMenu(build.menu(template));
      if (iconFile !== shown.iconFile) tray.setImage(build.image(iconFile));
      if (tooltip !== shown.tooltip) tray.setToolTip(tooltip);
      shown = { menu, iconFile, tooltip };
    },
    invalidate() {
      shown = { ...shown, menu: '' };
    },
  };
}
