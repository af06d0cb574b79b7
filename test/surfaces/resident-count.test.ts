// @vitest-environment jsdom
// The dashboard's header, the tray's tooltip and `llmtray status` each say how many models are
// resident. They once counted from three lists of their own, so during a load the dashboard
// said 2 and the tray 1. This renders the real header and builds the real tooltip and status
// text from one snapshot with a loading model, and reads the number each one shows.
import { cleanup, screen } from '@testing-library/react';
import { createElement } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { statusText } from '../../core/cli/format.js';
import { trayStatus } from '../../electron/tray-menu.js';
import { App } from '../../renderer/src/components/app.js';
import { renderWithSnapshot } from '../../renderer/src/test-fixtures/render.js';
import { fixtureSnapshotDuringLoad } from '../support/fixture-snapshot.js';

afterEach(cleanup);

/** The count a surface shows, or null where it shows none (so one assertion names every surface that disagrees). */
function numberIn(text: string, pattern: RegExp): number | null {
  const found = pattern.exec(text)?.[1];
  return found === undefined ? null : Number(found);
}

describe('the resident count during a load', () => {
  it('is the same on the dashboard, in the tray and in the CLI, and counts the loading model', () => {
    const snapshot = fixtureSnapshotDuringLoad();
    expect(snapshot.models.map((m) => m.status.state)).toContain('loading');

    const { container } = renderWithSnapshot(createElement(App), snapshot);
    const header = container.querySelector('.header-summary')?.textContent ?? '';
    const dashboard = numberIn(header, /^(\d+) of \d+ resident/);
    const tray = numberIn(trayStatus(snapshot).tooltip, /(\d+) models? resident/);
    const cli = numberIn(statusText(snapshot, snapshot.startedAt), /^(\d+) of \d+ resident$/m);

    expect({ dashboard, tray, cli }).toEqual({ dashboard: 2, tray: 2, cli: 2 });
    expect(screen.getByText(/of 4 resident/)).toBeTruthy();
  });
});
