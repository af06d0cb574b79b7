// The module resolve hook registered by register.mjs: 'electron' is the stand-in, everything else as usual.
const STAND_IN = new URL('./index.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'electron') return { url: STAND_IN, format: 'module', shortCircuit: true };
  return nextResolve(specifier, context);
}
