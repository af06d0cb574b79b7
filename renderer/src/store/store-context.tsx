// How components reach the store and the clock. Both come from context so a test renders a
// view with its own store and a fixed clock, and nothing is module-global.
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import { useStore } from 'zustand';
import type { DashboardActions, DashboardState, DashboardStore } from './dashboard-store.js';

const StoreContext = createContext<DashboardStore | null>(null);
const ClockContext = createContext<() => number>(Date.now);

export interface DashboardProviderProps {
  store: DashboardStore;
  /** Epoch ms; default Date.now. Tests pass a fixed clock so countdowns and "ago" are exact. */
  now?: () => number;
  children: ReactNode;
}

export function DashboardProvider({ store, now = Date.now, children }: DashboardProviderProps) {
  return (
    <StoreContext.Provider value={store}>
      <ClockContext.Provider value={now}>{children}</ClockContext.Provider>
    </StoreContext.Provider>
  );
}

export function useDashboardStore(): DashboardStore {
  const store = useContext(StoreContext);
  if (store === null) throw new Error('A dashboard component was rendered outside <DashboardProvider>.');
  return store;
}

/**
 * Selects from the store. Select narrowly and return stable values (a field, not a new array
 * or object built in the selector), or wrap the selector in zustand's useShallow.
 */
export function useDashboard<T>(selector: (state: DashboardState) => T): T {
  return useStore(useDashboardStore(), selector);
}

/** The store's actions; they never change, so this never re-renders a component. */
export function useActions(): DashboardActions {
  return useDashboardStore().getState();
}

/** The current time, re-read every `tickMs` while the component is mounted (countdowns, elapsed time). */
export function useNow(tickMs = 1000): number {
  const now = useContext(ClockContext);
  const [time, setTime] = useState(now);
  useEffect(() => {
    setTime(now());
    const timer = setInterval(() => setTime(now()), tickMs);
    return () => clearInterval(timer);
  }, [now, tickMs]);
  return time;
}
