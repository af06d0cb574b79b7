// What local apps are doing with each model: requests waiting, the last use.
//
// The router writes it on every request; the desired-state provider reads it on every pass.
// It is the source of `lastUsed` (a model with a request waiting beats an idle one of the same
// priority, which is what makes on-demand swapping work) and of `waitingSince` (requests for
// several models are served a model at a time, in the order they came), so it stays a few map
// operations: it sits on the request path. Requests in flight are not counted here but where
// they are claimed, on the engine's server (core/engine/supervisor/server-claims.ts), which is
// where an eviction must see them.
//
// Why a request that was refused does not keep its model wanted: a demand only stamps
// `demandedAt`, which counts for a short grace (long enough for the router's fresh controller
// pass), while the idle TTL runs from real use (a request served, or a person's Load). Counting
// the refusal as use would load the model minutes later, when nobody is asking any more.

import type { Clock } from '../common/clock.js';
import { Emitter, type Event } from '../common/emitter.js';

/**
 * Every stamp here is the clock's elapsed() (the idle TTL, the demand grace and the turns are
 * durations, and the policy's order must not turn over with a wall-clock step) but the last use a
 * person reads, which is kept in epoch ms beside it.
 */
export type ActivityClock = Pick<Clock, 'now' | 'elapsed'>;

/** How long a bare demand (a cold request before it waits, or is refused) keeps a model wanted. */
export const DEMAND_GRACE_MS = 15_000;

export class ModelActivity {
  /** Per model, its waiting requests' arrivals in arrival order (a Map keeps insertion order). */
  private readonly waitingById = new Map<string, Map<object, number>>();
  /** Ordering stamp: any demand or use. The policy's `lastUsed`. */
  private readonly lastUsedById = new Map<string, number>();
  /** The same moment in epoch ms: the last use a person reads. */
  private readonly lastUsedAtById = new Map<string, number>();
  /** Real use (served, or loaded by a person): the idle TTL runs from here. */
  private readonly keptAtById = new Map<string, number>();
  private readonly demandedAtById = new Map<string, number>();
  private readonly changes = new Emitter<void>('the activity');

  constructor(private readonly clock: ActivityClock) {}

  /** A request for a model that is not serving yet: wanted now, and most recent among equals. */
  demand(modelId: string): void {
    const now = this.clock.elapsed();
    this.demandedAtById.set(modelId, now);
    this.stampUse(modelId, now);
    this.changed();
  }

  /** A request waits for the model; the returned callback ends the wait (idempotent). */
  wait(modelId: string): () => void {
    let waiting = this.waitingById.get(modelId);
    if (waiting === undefined) {
      waiting = new Map();
      this.waitingById.set(modelId, waiting);
    }
    const token = {};
    waiting.set(token, this.clock.elapsed());
    this.changed();
    return () => {
      const still = this.waitingById.get(modelId);
      if (still === undefined || !still.delete(token)) return;
      if (still.size === 0) this.waitingById.delete(modelId);
      this.changed();
    };
  }

  /** When the model's oldest waiting request arrived (elapsed()); undefined when none waits. */
  waitingSince(modelId: string): number | undefined {
    const waiting = this.waitingById.get(modelId);
    if (waiting === undefined) return undefined;
    for (const arrivedAt of waiting.values()) return arrivedAt;
    return undefined;
  }

  /** How many requests wait for the model now (the tray's "waiting"). */
  waitingCount(modelId: string): number {
    return this.waitingById.get(modelId)?.size ?? 0;
  }

  /** Whether any request waits for any model. */
  anyWaiting(): boolean {
    return this.waitingById.size > 0;
  }

  /** A person's Load: counts as use, so the model stays for its idle TTL. */
  use(modelId: string): void {
    const now = this.clock.elapsed();
    this.stampUse(modelId, now);
    this.keptAtById.set(modelId, now);
    this.changed();
  }

  /** A person's Unload: nothing keeps the model now but a pin or a request. */
  forget(modelId: string): void {
    // Both, always: `a.delete() || b.delete()` would stop at the first, leaving a just-served
    // model wanted for the demand grace after an Unload.
    const kept = this.keptAtById.delete(modelId);
    const demanded = this.demandedAtById.delete(modelId);
    this.lastUsedById.delete(modelId);
    this.lastUsedAtById.delete(modelId);
    if (kept || demanded) this.changed();
  }

  /** The last demand or use, elapsed(): for the policy's order. */
  lastUsed(modelId: string): number | undefined {
    return this.lastUsedById.get(modelId);
  }

  /** The last demand or use, epoch ms: for people to read. */
  lastUsedAt(modelId: string): number | undefined {
    return this.lastUsedAtById.get(modelId);
  }

  /** Wanted because of use: waiting, just demanded, or used within its idle TTL (in flight is the claims'). */
  recentlyUsed(modelId: string, idleTtlMs: number): boolean {
    if (this.waitingById.has(modelId)) return true;
    const now = this.clock.elapsed();
    const demanded = this.demandedAtById.get(modelId);
    if (demanded !== undefined && now - demanded < DEMAND_GRACE_MS) return true;
    const kept = this.keptAtById.get(modelId);
    return kept !== undefined && now - kept < idleTtlMs;
  }

  /** Fires after every change; the daemon refreshes the snapshot from it. */
  readonly onDidChange: Event<void> = this.changes.event;

  private stampUse(modelId: string, elapsed: number): void {
    this.lastUsedById.set(modelId, elapsed);
    this.lastUsedAtById.set(modelId, this.clock.now());
  }

  private changed(): void {
    this.changes.fire();
  }
}
