// Bundles the preload (preload.ts and what it imports) into one CommonJS file,
// dist/electron/preload.cjs: `npx vite build --config electron/vite.preload.config.ts`.
//
// Why a bundle: with `sandbox: true` the preload runs as a plain script whose `require` knows
// only 'electron' and a few built-ins, so the contract and the bridge it imports must be
// inlined, and the output must be CommonJS (sandboxed preloads cannot be ES modules).
// test/unit/electron/preload-sandbox.test.ts builds with this same config and runs the result
// the way Electron's sandbox does.
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  publicDir: false,
  logLevel: 'warn',
  build: {
    outDir: '../dist/electron',
    // dist/electron also holds main.js and friends from tsc.
    emptyOutDir: false,
    target: 'es2022',
    minify: false,
    lib: { entry: 'preload.ts', formats: ['cjs'], fileName: () => 'preload.cjs' },
    rolldownOptions: { external: ['electron'] },
  },
});
