// The layering lint is what keeps DESIGN.md's dependency arrows true; test that it catches
// each kind of wrong-way import, and lets the right ones through.
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs script without type declarations
import { violations } from '../../scripts/lint-layers.mjs';

const check = violations as (file: string, source: string) => string[];

describe('lint-layers', () => {
  it.each([
    ['core/policy/place.ts', "import { readFileSync } from 'node:fs';", /must not import packages, Node/],
    ['core/policy/place.ts', "import { x } from '../catalog/catalog.js';", /depends on nothing but core\/contracts/],
    ['core/contracts/snapshot.ts', "import type { Catalog } from '../catalog/catalog.js';", /imports nothing outside itself/],
    ['core/contracts/snapshot.ts', "import type { LaunchLevel } from '../policy/levels.js';", /imports nothing outside itself/],
    ['core/contracts/format-bytes.ts', "export { formatBytes } from '../policy/reasons.js';", /imports nothing outside itself/],
    ['core/router/router.ts', "import { app } from 'electron';", /nothing under core\/ may import electron/],
    ['renderer/src/app.tsx', "import { place } from '../../core/policy/place.js';", /may import only from core\/contracts/],
    ['renderer/src/app.tsx', "import { join } from 'node:path';", /no Node built-ins/],
    ['renderer/src/app.tsx', "const m = await import('electron');", /preload bridge only/],
    ['core/catalog/gguf-metadata.ts', "import { readGgufFileInfo } from 'node-llama-cpp';", /only the embedded engine \(core\/engine\/embedded\) may import node-llama-cpp/],
    ['electron/main.ts', "const { getLlama } = await import('node-llama-cpp');", /only the embedded engine/],
    ['core/admin-client/admin-http-client.ts', "import { request } from 'node:http';", /runs in a browser too/],
    ['core/admin-client/admin-http-client.ts', "import type { Catalog } from '../catalog/catalog.js';", /depends on nothing but core\/contracts/],
    ['core/router/router.ts', "import { ModelActivity } from '../demand/activity.js';", /only core\/daemon.ts and core\/daemon\/ import it/],
    ['core/controller/controller.ts', "import { Later } from '../daemon/later.js';", /composition root: only it and the CLI/],
    ['core/demand/gateway.ts', "import type { RunningDaemon } from '../daemon.js';", /composition root: only it and the CLI/],
  ])('%s: %s is refused', (file, source, why) => {
    const found = check(file, source);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(why);
  });

  it.each([
    ['core/policy/place.ts', "import { footprintAt } from './levels.js';"],
    ['core/contracts/snapshot.ts', "import type { LaunchLevel } from './launch-level.js';"],
    ['core/policy/levels.ts', "import type { LaunchLevel } from '../contracts/launch-level.js';"],
    ['core/policy/reasons.ts', "import { formatBytes } from '../contracts/format-bytes.js';"],
    ['core/router/router.ts', "import http from 'node:http';"],
    ['renderer/src/app.tsx', "import type { Snapshot } from '../../core/contracts/snapshot.js';"],
    ['renderer/src/app.tsx', "import { create } from 'zustand';"],
    ['renderer/src/format/format.ts', "export { formatBytes } from '../../../core/contracts/format-bytes.js';"],
    ['core/engine/embedded/model-loader.ts', "import { getLlama } from 'node-llama-cpp';"],
    ['renderer/src/transport/http-bridge.ts', "import { readEventStream } from '../../../core/admin-client/event-stream-reader.js';"],
    ['core/admin-client/admin-http-client.ts', "import type { AdminApi } from '../contracts/admin-routes.js';"],
    ['core/daemon/control-loop.ts', "import { ModelTurns } from '../demand/turns.js';"],
    ['core/daemon.ts', "import { ModelActivity } from './demand/activity.js';"],
    ['core/cli.ts', "import { readDaemonInfo } from './daemon/daemon-info.js';"],
  ])('%s: %s is allowed', (file, source) => {
    expect(check(file, source)).toEqual([]);
  });
});
