// Model downloads from the Hugging Face Hub (README.md): what the daemon wires, and what another
// route (Ollama's `/api/pull`) calls to start a pull and follow it: `PullManager.start`, its
// `onDidChange` and `finished(id)`.
export { PullManager, PROGRESS_INTERVAL_MS, type PullManagerOptions } from './pull-manager.js';
export { readHubAccess, type HubAccess } from './hub-access.js';
export { whenListed } from './catalog-listing.js';
export type { MachineRoom } from './quant-fit.js';
