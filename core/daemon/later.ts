// A part that is made after a part that asks it: the budget asks the supervisor for our engines'
// pids, the supervisor asks the budget for its mode; the turns ask the controller for rivals, the
// controller asks the turns (through the desired state) what they hold. Each cycle is broken here,
// named, instead of by a closure over a variable declared further down (which read as if the
// order of statements did not matter, and threw if a call came early).

export class Later<T> {
  private value: T | null = null;

  constructor(private readonly name: string) {}

  /** Sets the part, once. */
  set(value: T): T {
    if (this.value !== null) throw new Error(`${this.name} is set twice`);
    this.value = value;
    return value;
  }

  /** The part; throws while it is not made yet (a call during assembly that should not be). */
  get(): T {
    if (this.value === null) throw new Error(`${this.name} is asked before it exists`);
    return this.value;
  }

  /** The part, or null while it is not made yet (for a question that has an answer before: "no engines run"). */
  peek(): T | null {
    return this.value;
  }
}
