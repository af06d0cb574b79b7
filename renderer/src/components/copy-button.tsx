import { useEffect, useState } from 'react';

export interface CopyButtonProps {
  text: string;
  /** The accessible name, e.g. "Copy endpoint URL". */
  label: string;
  /** Visible text; defaults to "Copy". */
  children?: string;
}

/** Copies `text` and says so for two seconds (visibly and to screen readers). */
export function CopyButton({ text, label, children = 'Copy' }: CopyButtonProps) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (state === 'idle') return;
    const timer = setTimeout(() => setState('idle'), 2000);
    return () => clearTimeout(timer);
  }, [state]);
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      // Clipboard access can be refused (an unfocused window, a browser setting).
      setState('failed');
    }
  };
  return (
    <>
      <button type="button" className="button button-small copy-button" aria-label={label} onClick={() => void copy()} data-state={state}>
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : children}
      </button>
      <span className="visually-hidden" role="status">
        {state === 'copied' ? 'Copied to the clipboard' : state === 'failed' ? 'Could not copy to the clipboard' : ''}
      </span>
    </>
  );
}
