// WAI-ARIA tabs: one tab stop for the list, arrow keys (and Home/End) move between tabs.
import { useId, useRef, type KeyboardEvent, type ReactNode } from 'react';

export interface TabSpec<Id extends string> {
  id: Id;
  label: string;
  /** A count badge (failing models, models that did not fit); hidden when 0 or absent. */
  count?: number;
  /** What the count counts, for the accessible name: "Recovery (1 failing)". */
  countLabel?: string;
}

export interface TabsProps<Id extends string> {
  tabs: TabSpec<Id>[];
  selected: Id;
  onSelect(id: Id): void;
  label: string;
  children: ReactNode;
}

export function Tabs<Id extends string>({ tabs, selected, onSelect, label, children }: TabsProps<Id>) {
  const base = useId();
  const refs = useRef(new Map<Id, HTMLButtonElement>());
  const move = (event: KeyboardEvent, index: number): void => {
    const last = tabs.length - 1;
    const to =
      event.key === 'ArrowRight' ? (index === last ? 0 : index + 1)
      : event.key === 'ArrowLeft' ? (index === 0 ? last : index - 1)
      : event.key === 'Home' ? 0
      : event.key === 'End' ? last
      : null;
    if (to === null) return;
    event.preventDefault();
    const target = tabs[to];
    if (target === undefined) return;
    onSelect(target.id);
    refs.current.get(target.id)?.focus();
  };
  return (
    <div className="tabs">
      <div role="tablist" aria-label={label} className="tablist">
        {tabs.map((tab, index) => (
          <button
            key={tab.id}
            ref={(element) => {
              if (element === null) refs.current.delete(tab.id);
              else refs.current.set(tab.id, element);
            }}
            type="button"
            role="tab"
            id={`${base}-${tab.id}`}
            aria-selected={tab.id === selected}
            aria-controls={`${base}-panel`}
            tabIndex={tab.id === selected ? 0 : -1}
            aria-label={counted(tab) ? `${tab.label} (${tab.count} ${tab.countLabel ?? ''})`.replace(' )', ')') : undefined}
            className="tab"
            onClick={() => onSelect(tab.id)}
            onKeyDown={(event) => move(event, index)}
          >
            {tab.label}
            {counted(tab) && (
              <span className="tab-count" aria-hidden="true">
                {tab.count}
              </span>
            )}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`${base}-panel`} aria-labelledby={`${base}-${selected}`} className="tabpanel" tabIndex={0}>
        {children}
      </div>
    </div>
  );
}

function counted(tab: TabSpec<string>): boolean {
  return tab.count !== undefined && tab.count > 0;
}
