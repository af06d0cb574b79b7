// Builds the dashboard into dist/renderer, which the daemon serves in headless mode
// (core/admin/static-files.ts) and Electron loads from disk.
//
// Why these settings:
// - base './': the same files are loaded from file:// in Electron and from / over HTTP; absolute
//   asset URLs would break the first.
// - root is this folder whatever the working directory, so `npx vite build --config
//   renderer/vite.config.ts` from the repo root and `vite` from here build the same thing.
// - Only index.html is an input: renderer/dev/ (the screenshot fixture) never reaches the bundle.
// - No inline scripts or styles are emitted (Vite writes CSS to a file), because the daemon's CSP
//   is `script-src 'self'; style-src 'self'`.
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: './',
  plugins: [react()],
  build: {
    outDir: '../dist/renderer',
    emptyOutDir: true,
    target: 'es2022',
    // A data: URL for a small asset would need `img-src data:` everywhere it is used; files are simpler.
    assetsInlineLimit: 0,
  },
  server: { host: '127.0.0.1' },
  preview: { host: '127.0.0.1' },
});
