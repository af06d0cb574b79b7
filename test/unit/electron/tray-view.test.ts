import { describe, expect, it } from 'vitest';
import { createTrayView } from '../../../electron/tray-view.js';

function recordingTray() {
  const calls: string[] = [];
  const tray = {
    setContextMenu: (menu: string) => calls.push(`menu ${menu}`),
    setImage: (image: string) => calls.push(`image ${image}`),
    setToolTip: (text: string) => calls.push(`tooltip ${text}`),
  };
  const view = createTrayView(tray, { menu: (template) => template.map((item) => item.label).join('|'), image: (file) => file });
  return { calls, view };
}

describe('createTrayView', () => {
  it('sets the menu, the icon and the tooltip only when each differs from what the tray shows', () => {
    const { calls, view } = recordingTray();
    const loading = { template: [{ label: 'demo-chat — loading 40 %', click: () => {} }], iconFile: 'loading.png', tooltip: '1 loading' };
    view.show(loading);
    // The same lines with new click closures, as every rebuild makes them: nothing to set.
    view.show({ ...loading, template: [{ label: 'demo-chat — loading 40 %', click: () => {} }] });
    view.show({ ...loading, template: [{ label: 'demo-chat — loading 50 %' }] });
    view.show({ template: [{ label: 'demo-chat — ready' }], iconFile: 'ok.png', tooltip: '1 loading' });
    expect(calls).toEqual(['menu demo-chat — loading 40 %', 'image loading.png', 'tooltip 1 loading', 'menu demo-chat — loading 50 %', 'menu demo-chat — ready', 'image ok.png']);
  });

  it('does not set again the icon the tray was created with', () => {
    const calls: string[] = [];
    const tray = { setContextMenu: () => {}, setImage: (image: string) => calls.push(image), setToolTip: () => {} };
    const view = createTrayView(tray, { menu: () => 'menu', image: (file) => file }, 'loading.png');
    view.show({ template: [], iconFile: 'loading.png', tooltip: 'starting' });
    view.show({ template: [], iconFile: 'ok.png', tooltip: 'ready' });
    expect(calls).toEqual(['ok.png']);
  });

  it('sets the same menu again after invalidate (a checkbox that toggled itself for a command that did not take)', () => {
    const { calls, view } = recordingTray();
    const shown = { template: [{ label: 'Pinned', type: 'checkbox' as const, checked: false }], iconFile: 'ok.png', tooltip: 't' };
    view.show(shown);
    view.invalidate();
    view.show(shown);
    expect(calls.filter((call) => call.startsWith('menu'))).toHaveLength(2);
  });
});
