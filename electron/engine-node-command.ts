// How to run the embedded engine (a Node script) as a child process from wherever we are.
//
// Under plain Node, `process.execPath` is node. Under Electron it is the Electron binary, which
// would open a second app (and a second tray icon) unless told to behave as Node through
// ELECTRON_RUN_AS_NODE=1 in the child's environment. Setting that variable on our own
// process.env instead was rejected: every child would inherit it, including anything the app
// relaunches.

export interface EngineNodeCommand {
  /** The executable that runs a Node script. */
  command: string;
  /** Variables to add to the child's environment (on top of the parent's). */
  env: Readonly<Record<string, string>>;
}

export function engineNodeCommand(options: { execPath: string; isElectron: boolean }): EngineNodeCommand {
  return {
    command: options.execPath,
    env: options.isElectron ? { ELECTRON_RUN_AS_NODE: '1' } : {},
  };
}
