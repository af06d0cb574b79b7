// A model server's log, bounded.
//
// Why a ring of lines and not a file: a llama-server at verbosity 3 prints a line per
// request, and a tray app that runs for weeks must not grow without bound; the dashboard and
// the failure classifier only need the recent past. Lines are also cut to a maximum length,
// because one line without a newline (a binary dump, a progress bar) would otherwise be
// unbounded on its own.
//
// Each line has a position, its number since the ring was made, which stays true after older
// lines fall off the front: live readers (the admin event stream) place what they are sent by
// it (core/contracts/log-lines.ts).

export class LineRing {
  private readonly lines: string[] = [];
  private start = 0;
  /** Lines that fell off the front since the ring was made. */
  dropped = 0;

  /** `onPush` hears each line as kept (cut if it was overlong) with its position; it runs synchronously and must not throw. */
  constructor(
    readonly capacity: number,
    readonly maxLineChars = 4096,
    private readonly onPush?: (line: string, position: number) => void,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`a log ring needs room for at least 1 line, got ${capacity}`);
  }

  push(line: string): void {
    const kept = line.length > this.maxLineChars ? `${line.slice(0, this.maxLineChars)}… (${line.length} chars)` : line;
    const position = this.next;
    this.lines.push(kept);
    if (this.lines.length - this.start > this.capacity) {
      this.start++;
      this.dropped++;
    }
    // Compact once per `capacity` drops instead of shifting on every line (shift is O(n)).
    if (this.start >= this.capacity) {
      this.lines.splice(0, this.start);
      this.start = 0;
    }
    this.onPush?.(kept, position);
  }

  /** The position the next line will have: every line pushed so far, kept or dropped. */
  get next(): number {
    return this.dropped + this.size;
  }

  /** The kept lines, oldest first; the last `n` when given. */
  toArray(n?: number): string[] {
    const all = this.lines.slice(this.start);
    return n === undefined ? all : all.slice(Math.max(0, all.length - n));
  }

  get size(): number {
    return this.lines.length - this.start;
  }
}

/**
 * Cuts one output stream into lines. stdout and stderr each need their own: a chunk of one
 * can end in the middle of a line while the other writes. A line longer than `maxChars` is
 * handed on in pieces rather than held without bound.
 */
export class LineSplitter {
  private partial = '';

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxChars = 4096,
  ) {}

  write(chunk: string): void {
    const parts = (this.partial + chunk).split(/\r?\n/);
    this.partial = parts.pop() ?? '';
    for (const line of parts) this.onLine(line);
    while (this.partial.length > this.maxChars) {
      this.onLine(this.partial.slice(0, this.maxChars));
      this.partial = this.partial.slice(this.maxChars);
    }
  }

  /** The stream ended: an unfinished last line is a line. */
  end(): void {
    if (this.partial !== '') this.onLine(this.partial);
    this.partial = '';
  }
}
