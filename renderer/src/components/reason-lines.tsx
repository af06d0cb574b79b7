// A plan's reason for leaving a model out, a line per clause: what it needs, then each GPU's
// room, then the notes and the verdict. On a workstation with several GPUs the sentence runs to
// several hundred characters; as one paragraph nobody finds the GPU they care about in it.
// The words are the policy's own (split by core/contracts' reasonLines), nothing reworded.
import { reasonLines } from '../../../core/contracts/snapshot-words.js';

export function ReasonLines({ reason, label, className = '' }: { reason: string; label: string; className?: string }) {
  return (
    <ul className={`reason-lines ${className}`.trimEnd()} aria-label={label}>
      {reasonLines(reason).map((line, i) => (
        <li key={i}>{line}</li>
      ))}
    </ul>
  );
}
