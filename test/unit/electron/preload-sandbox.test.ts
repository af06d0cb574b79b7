// Builds the preload exactly as the app does (electron/vite.preload.config.ts) and runs the
// bundle the way Electron's sandboxed renderer runs a preload: one script wrapped in a function
// whose `require` knows only 'electron', in a context with no Node globals. A relative require,
// an ES module or a Node built-in sneaking into the preload fails here instead of as a blank
// dashboard on someone's desktop.
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { build, type Rolldown } from 'vite';
import preloadConfig from '../../../electron/vite.preload.config.js';

async function bundlePreload(): Promise<string> {
  const result = await build({ ...preloadConfig, configFile: false, build: { ...preloadConfig.build, write: false } });
  const outputs = (Array.isArray(result) ? result : [result]) as Rolldown.RolldownOutput[];
  const chunk = outputs.flatMap((output) => output.output).find((file) => file.fileName === 'preload.cjs');
  if (chunk === undefined || chunk.type !== 'chunk') throw new Error('the preload build produced no preload.cjs');
  return chunk.code;
}

describe('the bundled preload in a sandbox', () => {
  it('needs only electron and exposes exactly the bridge as window.llmtray', async () => {
    const code = await bundlePreload();
    const required: string[] = [];
    const exposed: Array<[string, Record<string, unknown>]> = [];
    const invoked: unknown[][] = [];
    const electron = {
      contextBridge: { exposeInMainWorld: (key: string, api: Record<string, unknown>) => exposed.push([key, api]) },
      ipcRenderer: {
        invoke: async (...args: unknown[]) => {
          invoked.push(args);
          // Main's InvokeReply carrying the command's result.
          return { ok: true, answer: { ok: true, message: 'pinned' } };
        },
        on: () => {},
        removeListener: () => {},
      },
    };
    const sandboxRequire = (name: string): unknown => {
      required.push(name);
      if (name === 'electron') return electron;
      throw new Error(`a sandboxed preload cannot require '${name}'`);
    };
    const wrapped = runInNewContext(`(function (require, process, Buffer, global, setImmediate, clearImmediate, exports, module) {\n${code}\n})`, {
      console,
    }) as (...args: unknown[]) => void;
    const module = { exports: {} };
    wrapped(sandboxRequire, {}, undefined, {}, undefined, undefined, module.exports, module);

    expect(required).toEqual(['electron']);
    expect(exposed.map(([key]) => key)).toEqual(['llmtray']);
    const api = exposed[0]![1];
    expect(Object.keys(api).sort()).toEqual(['cancelPull', 'deletePull', 'getActivity', 'getLogs', 'getSnapshot', 'listPulls', 'offerRepo', 'runCommand', 'searchHub', 'startPull', 'subscribe']);
    await expect((api.runCommand as (params: unknown) => Promise<unknown>)({ id: 'demo-chat', command: 'pin' })).resolves.toEqual({ ok: true, message: 'pinned' });
    expect(invoked).toEqual([['llmtray:runCommand', { id: 'demo-chat', command: 'pin' }]]);
  });
});
