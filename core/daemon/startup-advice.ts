// The words of a start-up refusal, for where it is shown.
//
// `llmtray serve` runs in a terminal that took the flags, so its advice names them; the desktop
// app shows the same refusal in an error box to a person who started it from a menu and has no
// flags to pass, so its advice names what that person can do: the config file (which the app
// keeps, the demo's too) and the other llmtray to quit. One file holds both wordings, so the
// facts in them (the port, the file, the pid) cannot drift apart.

/** Where a start-up refusal is read: the CLI's terminal, or the desktop app's error box. */
export type AdviceFace = 'cli' | 'desktop';

export function portTakenMessage(face: AdviceFace, where: { port: number; host: string; configPath: string }): string {
  const taken = `port ${where.port} on ${where.host} is already in use (another llmtray, or another program)`;
  if (face === 'cli') return `${taken}; pass --port N, or set listen.port in ${where.configPath}`;
  return `${taken}. Quit the program that uses it, or set another listen.port in ${where.configPath} (llmtray keeps that file), then start llmtray again.`;
}

export function dataDirTakenMessage(face: AdviceFace, holder: { pid: number; lockPath: string }): string {
  if (face === 'cli') return `another llmtray daemon (pid ${holder.pid}) already uses this data dir; stop it first, or pass another --data-dir (lock: ${holder.lockPath})`;
  return `another llmtray (pid ${holder.pid}) is already running on this data dir. Quit the other llmtray (Quit in its tray menu, or Ctrl-C where \`llmtray serve\` runs), then start this one again. (lock: ${holder.lockPath})`;
}

/**
 * A config file that no check passed at start: nothing good was ever read, so there is no last
 * good config to keep running, and serving the defaults instead would answer "no such model"
 * for every model the file meant to define. The refusal lists each error (file, field, value;
 * or file, line and column) and says what to do.
 */
export function badConfigAtStartMessage(face: AdviceFace, where: { configPath: string; errors: readonly string[]; demo: boolean }): string {
  const count = where.errors.length === 1 ? 'an error' : `${where.errors.length} errors`;
  const lines = [`the config file ${where.configPath} has ${count}, so llmtray does not start:`, ...where.errors.map((error) => `  ${error}`)];
  // The demo writes its config only when absent: deleting it is the other way out of a broken one.
  const fresh = where.demo ? ', or delete it and the demo writes a fresh one' : '';
  // Said in a terminal that `llmtray serve`, `npm run serve` or `npm start` (headless) opened: "start", not one of their commands.
  if (face === 'cli') lines.push(`Fix the file${fresh}, then start llmtray again. (Once it runs, an edit with an error is reported and the last good config keeps running.)`);
  else lines.push(`Fix the file (llmtray keeps it)${fresh}, then start llmtray again.`);
  return lines.join('\n');
}
