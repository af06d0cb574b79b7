// The config the daemon runs on, and the rule that a bad edit never takes it down.
//
// A person saving config.yaml with a typo must not lose the models that are serving: a reload
// that fails validation keeps the last good config and returns why. A file that was never
// valid leaves the defaults (discovery only) in force here, with the errors; the daemon refuses
// to start on it (core/daemon.ts), since there is no last good config to keep running.
//
// A file that disappears is not at once a wish to run on the defaults: an editor saving by
// writing a temporary, deleting and renaming, or a deletion undone, would otherwise unload every
// configured model. The config in force stays for its own `deletedConfigGrace` (30 s by
// default), said as the reload's error; a reload once it has passed applies the defaults.
import type { PlatformFacts } from '../paths.js';
import { SerialQueue } from '../../common/serial-queue.js';
import { defaultConfig, loadConfigFile, type LlmtrayConfig } from './load-config.js';
import { Emitter, type Event } from '../../common/emitter.js';

/** `recheckInMs`: a reload then changes the outcome with nothing else changing (a deleted file's grace ending). */
export type ReloadResult = { ok: true } | { ok: false; errors: string[]; recheckInMs?: number };

export interface ConfigStoreOptions {
  file: string;
  facts: PlatformFacts;
  /**
   * Checks that need more than the file (ids of discovered models, vocabularies of GGUFs).
   * Returns error sentences; any error rejects the candidate like a schema error would.
   */
  check?: (candidate: LlmtrayConfig) => Promise<string[]>;
  /** Monotonic ms, for a deleted file's grace; default performance.now. */
  monotonicNow?: () => number;
}

/** What the config in force came from: the file's last good content, or the defaults (no file, or none good read yet). */
export type ConfigInForce = 'file' | 'defaults';

export class ConfigStore {
  private config: LlmtrayConfig;
  private lastErrors: string[] = [];
  private source: ConfigInForce = 'defaults';
  /** When (monotonic ms) a reload first found the file of the config in force gone; null while it is there. */
  private goneSince: number | null = null;
  private readonly changes = new Emitter<LlmtrayConfig>('the config');
  private readonly reloads = new SerialQueue();

  constructor(private readonly options: ConfigStoreOptions) {
    this.config = defaultConfig(options.file, options.facts);
  }

  /** The config in force: the last one that passed every check, or the defaults. Non-blocking. */
  current(): LlmtrayConfig {
    return this.config;
  }

  /**
   * Whether the config in force is the file's (its last good content) or the defaults: a bad
   * edit keeps "the last good config" only where one was read; after the file was absent or
   * deleted, it keeps the defaults. Non-blocking.
   */
  inForce(): ConfigInForce {
    return this.source;
  }

  /** The errors of the last reload; empty after a good one. Non-blocking. */
  errors(): readonly string[] {
    return this.lastErrors;
  }

  /**
   * Re-reads and re-checks the file. On success the new config is in force (listeners hear of
   * it if it differs); on failure the previous one stays and the errors say why. Blocks on file
   * I/O and `check`. Never rejects. Calls are serialised: each sees the file as it was when
   * its turn came, so the last call's outcome is what stays.
   */
  reload(): Promise<ReloadResult> {
    return this.reloads.run(async () => {
      try {
        return await this.reloadNow();
      } catch (error) {
        // A bug or an I/O failure past the file read: the last good config stays, as for a bad file.
        this.lastErrors = [`${this.options.file}: the config could not be reloaded: ${(error as Error).message}`];
        return { ok: false, errors: this.lastErrors };
      }
    });
  }

  /** Fires with the new config each time one in force changes (ConfigChanged). */
  readonly onDidChange: Event<LlmtrayConfig> = this.changes.event;

  private async reloadNow(): Promise<ReloadResult> {
    const loaded = await loadConfigFile(this.options.file, this.options.facts);
    if (loaded.ok && !loaded.fromFile && this.source === 'file') {
      const now = (this.options.monotonicNow ?? (() => performance.now()))();
      this.goneSince ??= now;
      const leftMs = this.goneSince + this.config.deletedConfigGraceMs - now;
      if (leftMs > 0) {
        this.lastErrors = [
          `${this.options.file}: the file is gone; the config read from it keeps running for ${Math.ceil(leftMs / 1000)} s more (deletedConfigGrace) in case it comes back, as an editor's save puts it back, then the defaults apply`,
        ];
        return { ok: false, errors: this.lastErrors, recheckInMs: Math.ceil(leftMs) };
      }
    }
    this.goneSince = null;
    let errors = loaded.ok ? [] : loaded.errors;
    if (loaded.ok && this.options.check) {
      try {
        errors = await this.options.check(loaded.config);
      } catch (error) {
        errors = [`${this.options.file}: the config could not be checked: ${(error as Error).message}`];
      }
    }
    this.lastErrors = errors;
    if (!loaded.ok || errors.length > 0) return { ok: false, errors };
    const changed = JSON.stringify(loaded.config) !== JSON.stringify(this.config);
    this.config = loaded.config;
    this.source = loaded.fromFile ? 'file' : 'defaults';
    if (changed) {
      // One faulty subscriber must not make the reload look failed to the others (Emitter's rule).
      this.changes.fire(loaded.config);
    }
    return { ok: true };
  }
}
