// A long text (llama.cpp's reason for a failed load) shortened to fit a card, with the full text
// one click away. Why a button and not <details>: the shortened line stays where it is and the
// full text opens below it, and the button's aria-expanded says which one is showing.
import { useId, useState } from 'react';
import { shorten } from '../../../core/contracts/snapshot-words.js';

export interface ExpandableTextProps {
  text: string;
  /** Longest shortened form, characters. */
  max: number;
  /** What the text is, for the button's name: "Full reason for demo-broken". */
  what: string;
}

export function ExpandableText({ text, max, what }: ExpandableTextProps) {
  const id = useId();
  const [open, setOpen] = useState(false);
  const short = shorten(text, max);
  const whole = short === text.trim();
  return (
    <>
      <span className="expandable-short">{short}</span>
      {!whole && (
        <>
          {' '}
          <button
            type="button"
            className="button button-link button-inline"
            aria-expanded={open}
            aria-controls={id}
            aria-label={`Full ${what}`}
            onClick={() => setOpen(!open)}
          >
            {open ? 'Less' : 'More'}
          </button>
          {open && (
            <pre id={id} className="expandable-full">
              {text}
            </pre>
          )}
        </>
      )}
    </>
  );
}
