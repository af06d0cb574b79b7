// TrayMenuItem (plain data) → Electron's menu template. Kept apart from tray-menu.ts so the
// menu's content has no Electron type in it, and this mapping stays too small to hide a bug.
import type { MenuItemConstructorOptions } from 'electron';
import { assertNever } from '../core/contracts/assert-never.js';
import type { TrayMenuItem } from './tray-menu.js';

/**
 * Electron's template for `items`. On Windows and Linux a single '&' in a label marks the
 * access key and disappears ("R&D-model" would read "RD-model"), so labels there double it.
 */
export function toMenuTemplate(items: readonly TrayMenuItem[], platform: NodeJS.Platform): MenuItemConstructorOptions[] {
  const text = (label: string): string => (platform === 'darwin' ? label : label.replaceAll('&', '&&'));
  return items.map((item): MenuItemConstructorOptions => {
    switch (item.type) {
      case 'separator':
        return { type: 'separator' };
      case 'normal':
        return {
          type: 'normal',
          label: text(item.label),
          enabled: item.enabled,
          ...(item.click ? { click: item.click } : {}),
          ...(item.toolTip !== undefined ? { toolTip: item.toolTip } : {}),
        };
      case 'checkbox':
        return { type: 'checkbox', label: text(item.label), checked: item.checked, enabled: item.enabled, click: item.click };
      case 'submenu':
        return {
          type: 'submenu',
          label: text(item.label),
          submenu: toMenuTemplate(item.submenu, platform),
          ...(item.toolTip !== undefined ? { toolTip: item.toolTip } : {}),
        };
      default:
        return assertNever(item);
    }
  });
}
