// One way to write a byte count for every surface (reasons, dashboard, tray, CLI), so that the
// number in a 503's reason and the same number in the memory picture read alike. The policy
// owns it because its reason sentences are where the convention matters most; the contract
// passes it on so the renderer can use it without importing anything else from core/.
export { formatBytes } from '../policy/reasons.js';
