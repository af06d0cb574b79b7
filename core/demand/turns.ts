// Turns: requests for several models that do not fit together are served a model at a time.
//
// A model keeps taking new requests until a model it stands in the way of (the controller's
// yieldsTo) has had a request waiting for `turnMs`; from then on new requests for it wait too,
// so it drains, the waiting model is swapped in and serves everything that waited for it, and
// the requests that queued up meanwhile are served after it. That bounds every wait (no model
// starves) and makes each swap serve a group, not one request (A A B B, not A B A B) — the
// thrash protection the anchors' users ask for.
//
// Why a turn also holds a model that has just turned idle: a client that sends its requests one
// after another leaves its model idle for the moment between receiving an answer and sending the
// next request, and an idle model is what a waiting one evicts. Without the hold, two clients on
// two models swapped at nearly every request whatever the turn (BENCHMARKS §9): the turn only
// ever helped where several clients kept one model busy between them. So for TURN_LINGER_MS
// after its last request ended, while its turn lasts and something waits for its memory, the
// policy counts the model as in use; a pass at the end of that moment evicts it if nobody came
// back. With turnMs 0 (first come, first served across models) there is no turn to hold.
import { OneShotTimer } from '../controller/one-shot-timer.js';
import type { Clock } from '../common/clock.js';
import type { ModelActivity } from './activity.js';

/**
 * How long a model whose turn lasts is held after its last request ended, ms. Long enough for a
 * client on the same machine to read an answer and send its next request (a few ms, tens on a
 * loaded machine); short beside any real model's load, which is what each swap it saves costs.
 */
export const TURN_LINGER_MS = 100;

export interface TurnParts {
  /** The models `modelId` stands in the way of (the controller's yieldsTo). */
  rivalsOf(modelId: string): readonly string[];
  activity: Pick<ModelActivity, 'waitingSince' | 'anyWaiting'>;
  /** Requests claimed on the model's server now. */
  inFlight(modelId: string): number;
  /** How long a rival must have waited before the model's turn is over, ms; 0: over as soon as one waits. */
  turnMs: number;
  clock: Clock;
  /** Asks the controller for a pass (once a held model's moment has passed). */
  passSoon(): void;
}

export class ModelTurns {
  /** When each model's last request ended (its claims fell to zero). */
  private readonly idleSince = new Map<string, number>();
  private readonly lingerEnd: OneShotTimer;

  constructor(private readonly parts: TurnParts) {
    this.lingerEnd = new OneShotTimer(parts.clock);
  }

  /** Whether `serving` must let the models it stands in the way of go first now. */
  isOver(serving: string): boolean {
    const rivals = this.parts.rivalsOf(serving);
    if (rivals.length === 0) return false;
    const at = this.parts.clock.elapsed();
    return rivals.some((rival) => {
      const since = this.parts.activity.waitingSince(rival);
      return since !== undefined && at - since >= this.parts.turnMs;
    });
  }

  /** The model's last request in flight ended. */
  idled(modelId: string): void {
    this.idleSince.set(modelId, this.parts.clock.elapsed());
    // The pass that decides once the moment is over: nothing else would come if nobody returns.
    if (this.parts.turnMs > 0 && this.parts.activity.anyWaiting()) this.lingerEnd.set(TURN_LINGER_MS + 1, () => this.parts.passSoon());
  }

  /** Whether the policy should count the idle model as in use: it served moments ago, something waits for its memory, and its turn is not over. */
  holds(modelId: string): boolean {
    if (this.parts.turnMs <= 0 || this.parts.inFlight(modelId) > 0) return false;
    const since = this.idleSince.get(modelId);
    if (since === undefined || this.parts.clock.elapsed() - since >= TURN_LINGER_MS) return false;
    return this.parts.rivalsOf(modelId).length > 0 && !this.isOver(modelId);
  }

  /** Cancels the pending pass (the daemon is stopping). */
  close(): void {
    this.lingerEnd.clear();
  }
}
