// Start-up step: the warm spare's size as the controller's pass weighs it. Whether a spare fits is
// the pass's verdict (core/controller/spare-verdict.ts), handed to the supervisor through
// ServerControl.setSpareWanted; the root only says what a spare holds, and asks for a pass when
// the spare itself changes (its measured size may not fit where the expected one did).
import type { Catalog } from '../../catalog/catalog.js';
import type { Event } from '../../common/emitter.js';
import type { Controller } from '../../controller/controller.js';
import type { RuntimeOverhead } from '../../engine/runtime-overhead.js';
import type { Supervisor } from '../../engine/supervisor/supervisor.js';

export interface WarmSpareSizing {
  /** What a spare holds or would (measured once it runs, else the embedded engine's runtime), while the config allows one; null when it does not. */
  allowedBytes(): number | null;
  /** What the running spare holds; null while none runs (for the snapshot). */
  spareBytes(): number | null;
}

export function warmSpareSizing(deps: { catalog: Catalog; supervisor: Supervisor; runtime: RuntimeOverhead }): WarmSpareSizing {
  const bytes = (): number => deps.supervisor.spareStatus()?.residentBytes ?? deps.runtime.bytes('embedded', 'host');
  return {
    allowedBytes: () => (deps.catalog.config().warmSpare ? bytes() : null),
    spareBytes: () => (deps.supervisor.spareStatus() === null ? null : bytes()),
  };
}

/** A pass at each change of the spare; returns the unsubscribe. */
export function passOnSpareChanges(controller: Controller, onSpareChange: Event<void>): () => void {
  return onSpareChange(() => controller.trigger());
}
