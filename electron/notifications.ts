// Which admin events become a desktop notification, and their words.
//
// Only what a person must act on or should know about even with no window open: a model that
// will not come back by itself (quarantined), one whose answers now come from another model
// (fell back), each naming the reason, and a pull that ended (done, or failed with what to do):
// downloads take minutes and are started and forgotten. Snapshots, log lines and a pull's
// progress never notify.
import type { AdminEvent } from '../core/contracts/admin-events.js';
import { assertNever } from '../core/contracts/assert-never.js';

export interface NotificationText {
  title: string;
  body: string;
}

export function notificationFor(event: AdminEvent): NotificationText | null {
  switch (event.type) {
    case 'ModelQuarantined':
      return {
        title: `${event.modelId} is quarantined`,
        // The reason already says it stays quarantined until retried (core/controller/model-record.ts); this adds only where Retry is.
        body: `${sentence(event.reason)} Retry is in the tray menu and on the dashboard.`,
      };
    case 'ModelFellBack':
      return {
        title: `${event.modelId} fell back to ${event.fallbackId}`,
        body: `${sentence(event.reason)} Requests for ${event.modelId} are answered by ${event.fallbackId} for now.`,
      };
    case 'PullProgressed': {
      const { pull } = event;
      if (pull.state === 'done') return { title: `${pull.id} is pulled`, body: pull.servedAs === undefined ? sentence(pull.message) : `Apps can use it now as ${pull.servedAs}.` };
      if (pull.state === 'failed') return { title: `Pulling ${pull.id} failed`, body: sentence(pull.message) };
      return null;
    }
    case 'SnapshotUpdated':
    case 'LogAppended':
    case 'RequestRecorded':
      return null;
    default:
      return assertNever(event);
  }
}

/** The reason as a sentence, so the next one does not run into it. */
function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}
