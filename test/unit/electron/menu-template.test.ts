import { describe, expect, it } from 'vitest';
import { toMenuTemplate } from '../../../electron/menu-template.js';
import type { TrayMenuItem } from '../../../electron/tray-menu.js';

describe('toMenuTemplate', () => {
  const clicks: string[] = [];
  const items: TrayMenuItem[] = [
    { type: 'normal', label: 'R&D model — ready', enabled: true, click: () => clicks.push('normal'), toolTip: '/models/rd.gguf' },
    { type: 'separator' },
    { type: 'submenu', label: 'a&b', submenu: [{ type: 'checkbox', label: 'Pinned', checked: true, enabled: true, click: () => clicks.push('pin') }] },
    { type: 'normal', label: 'No models yet', enabled: false },
  ];

  it('maps every item to Electron\'s template and keeps the clicks', () => {
    const template = toMenuTemplate(items, 'darwin');
    expect(template.map((item) => [item.type, item.label, item.enabled])).toEqual([
      ['normal', 'R&D model — ready', true],
      ['separator', undefined, undefined],
      ['submenu', 'a&b', undefined],
      ['normal', 'No models yet', false],
    ]);
    expect(template[0]!.toolTip).toBe('/models/rd.gguf');
    expect('click' in template[3]!).toBe(false);
    const submenu = template[2]!.submenu as Array<{ type?: string; checked?: boolean; click?: () => void }>;
    expect(submenu[0]).toMatchObject({ type: 'checkbox', checked: true });
    (template[0]!.click as () => void)();
    submenu[0]!.click!();
    expect(clicks).toEqual(['normal', 'pin']);
  });

  it('doubles & on Windows and Linux, where a single one marks an access key', () => {
    for (const platform of ['win32', 'linux'] as const) {
      const template = toMenuTemplate(items, platform);
      expect(template[0]!.label).toBe('R&&D model — ready');
      expect(template[2]!.label).toBe('a&&b');
    }
  });
});
