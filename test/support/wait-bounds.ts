// The bound of a wait for something a test expects to happen soon in its own process (a socket
// closed, a counter moved, a claim released). vi.waitFor's default, 1 s, is a deadline a busy
// 2-core machine misses now and then (a test worker stalled beside two busy loops); the wait
// ends as soon as the thing is seen, so a long bound costs nothing when the test passes, and
// stays under the files' 60 s test timeout so a failure still names what was not seen.
export const UNTIL_SEEN = { timeout: 45_000, interval: 20 } as const;
