// What a model's own arguments say about its vision projector. Apart from the catalog because
// the args are the person's words to the engine, read here only for the one flag that changes
// what the catalog prices and hands the engine (a projector found beside the model is dropped
// when the args name another, or none).

/**
 * A projector the person passes in `args` (or llama-server's `engineArgs`: only it has --mmproj) wins
 * over the folder's; `--no-mmproj` means none (null); undefined when the args say nothing.
 */
export function projectorFromArgs(args: readonly string[]): string | null | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--no-mmproj') return null;
    if (arg === '--mmproj' || arg === '-mm') return args[i + 1];
    if (arg.startsWith('--mmproj=')) return arg.slice('--mmproj='.length);
  }
  return undefined;
}
