// What an eviction did, in the supervisor's answer and the controller's port for it: one word,
// so the controller's fake and the real supervisor cannot drift apart on it.

/** 'stopped': the server is gone (or there was none); 'claimed': a request had claimed it, so it stays. */
export type EvictOutcome = 'stopped' | 'claimed';
