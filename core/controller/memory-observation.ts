// What a pass sees of memory: the budget (per device, and host RAM beside a GPU), what each
// running server holds, and the room a warm spare asks for. Read once at the start of every
// pass; the plan, the launches' host-RAM check, the move-up, the memory picture (held) and the
// warm spare's verdict all read this one observation.
//
// Why one: before, the pass planned on one sample while the daemon judged the spare on
// another (`budget.current()`, taken whenever an event came) and priced it with a mix of the
// pass's figures and its own estimates, so two answers about the same memory could disagree.
import type { Device } from '../policy/place.js';
import type { DesiredProvider, DesiredState, ServerControl } from './effects.js';

export interface MemoryObservation {
  /** The device-memory budget, bytes (the sum of `devices`). */
  budgetBytes: number;
  /** The devices the plan places on: the desired state's GPUs, or one pool of the whole budget. */
  devices: readonly Device[];
  /** Free host RAM beside a GPU, bytes; a launch's host share must fit in it. */
  hostFreeBytes: number;
  /** What each running server held, by model id (measured where possible, else estimated by the server control). */
  serverBytes: ReadonlyMap<string, number>;
  /** What a warm spare holds or would (DesiredState.warmSpare); null when none may be kept here. */
  warmSpareBytes: number | null;
}

/** Reads the world once for a pass: the desired state and what each server holds, in parallel. Rejects when either does. */
export async function observeWorld(provider: DesiredProvider, server: ServerControl): Promise<{ state: DesiredState; memory: MemoryObservation }> {
  const [state, serverBytes] = await Promise.all([provider.read(), server.measure()]);
  const memory: MemoryObservation = {
    budgetBytes: state.budgetBytes,
    devices: devicesOf(state),
    hostFreeBytes: state.hostFreeBytes,
    serverBytes,
    warmSpareBytes: state.warmSpare?.bytes ?? null,
  };
  return { state, memory };
}

/** The devices of a desired state: its GPUs, or one pool of its whole budget. */
function devicesOf(state: DesiredState): Device[] {
  if (state.devices !== undefined && state.devices.length > 0) return state.devices;
  return [{ index: 0, name: 'memory', deviceClass: 'pool', budgetBytes: state.budgetBytes }];
}
