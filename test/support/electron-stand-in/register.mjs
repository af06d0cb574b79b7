// `node --import test/support/electron-stand-in/register.mjs dist/electron/main.js`: from here on
// the specifier 'electron' resolves to this folder's index.mjs instead of the npm package (whose
// binary is not downloaded here and whose JS entry only exports the binary's path).
import { register } from 'node:module';

register('./resolve-hook.mjs', import.meta.url);
