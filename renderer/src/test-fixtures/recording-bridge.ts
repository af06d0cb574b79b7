// A DashboardBridge that records what the dashboard asks of it and lets a test play the
// daemon: push events, drop and restore the connection. Not a module mock: the store is
// handed this object exactly as main.tsx hands it a real transport.
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import type { DashboardBridge } from '../../../core/contracts/bridge.js';
import { AdminRefusal, type AdminArgs, type AdminParams } from '../../../core/contracts/admin-routes.js';
import type { HubModelHit, PullView, RepoOffer } from '../../../core/contracts/hub/pulls.js';
import { matchesFilter, type ActivityAnswer, type RequestFilter, type RequestRecord } from '../../../core/contracts/requests/request-record.js';
import type { CommandResult, ModelCommand, ModelLogsResponse } from '../../../core/contracts/commands.js';
import type { Snapshot } from '../../../core/contracts/snapshot.js';

export class RecordingBridge implements DashboardBridge {
  readonly commands: { command: ModelCommand; modelId: string }[] = [];
  readonly logRequests: string[] = [];
  /** Each model's whole log from position 0: getLogs answers all of it, with `next` its length. */
  logs: Record<string, string[]> = {};
  /** What getActivity answers (filtered as the daemon filters); a test sets the records. */
  requests: RequestRecord[] = [];
  activityKeep = 1000;
  keepBodiesBytes = 0;
  readonly activityRequests: AdminArgs<'getActivity'>[0][] = [];
  /** What runCommand answers; a function to vary by call. */
  answer: (command: ModelCommand, modelId: string) => Promise<CommandResult> = async (command, modelId) => ({
    ok: true,
    message: `${command} ${modelId}: done`,
  });
  private listener: ((event: AdminEvent) => void) | null = null;
  private onConnection: ((connected: boolean) => void) | null = null;

  constructor(private current: Snapshot | null = null) {}

  async getSnapshot(): Promise<Snapshot> {
    if (this.current === null) throw new Error('no snapshot yet');
    return this.current;
  }

  runCommand({ id: modelId, command }: AdminParams<'runCommand'>): Promise<CommandResult> {
    this.commands.push({ command, modelId });
    return this.answer(command, modelId);
  }

  async getLogs({ id }: AdminParams<'getLogs'>): Promise<ModelLogsResponse> {
    this.logRequests.push(id);
    const lines = [...(this.logs[id] ?? [])];
    return { modelId: id, lines, next: lines.length };
  }

  /** What searchHub answers, and the repos offerRepo knows; another repo is refused as the daemon refuses an unknown one. */
  hubHits: HubModelHit[] = [];
  offers: Record<string, RepoOffer> = {};
  readonly pullCalls: string[] = [];

  async startPull({ name }: AdminParams<'startPull'>): Promise<PullView> {
    this.pullCalls.push(`start ${name}`);
    return { id: name, repo: name.replace(/^hf\.co\//, '').split(':')[0] ?? name, state: 'downloading', files: [], receivedBytes: 0, totalBytes: 100, bytesPerSecond: 0, secondsLeft: null, message: '', startedAt: 0 };
  }

  async listPulls(): Promise<PullView[]> {
    return [];
  }

  async cancelPull({ name }: AdminParams<'cancelPull'>): Promise<PullView> {
    this.pullCalls.push(`cancel ${name}`);
    return { id: name, repo: name, state: 'cancelled', files: [], receivedBytes: 0, totalBytes: 100, bytesPerSecond: 0, secondsLeft: null, message: 'cancelled', startedAt: 0 };
  }

  async deletePull({ name }: AdminParams<'deletePull'>): Promise<{ removed: string[] }> {
    throw new AdminRefusal(404, 'not_pulled', `llmtray pulled no model ${name}.`);
  }

  async searchHub({ query }: AdminParams<'searchHub'>): Promise<HubModelHit[]> {
    this.pullCalls.push(`search ${query}`);
    return this.hubHits;
  }

  async offerRepo({ repo }: AdminParams<'offerRepo'>): Promise<RepoOffer> {
    const offer = this.offers[repo];
    if (offer === undefined) throw new AdminRefusal(404, 'repo_not_found', `There is no model ${repo} on the Hub.`);
    return offer;
  }

  async getActivity(...[filters = {}]: AdminArgs<'getActivity'>): Promise<ActivityAnswer> {
    this.activityRequests.push(filters);
    const filter: RequestFilter = {};
    if (filters.model !== undefined) filter.model = filters.model;
    if (filters.status !== undefined) filter.status = filters.status;
    if (filters.client !== undefined) filter.client = filters.client;
    return { requests: this.requests.filter((record) => matchesFilter(record, filter)), keep: this.activityKeep, keepBodiesBytes: this.keepBodiesBytes };
  }

  subscribe(listener: (event: AdminEvent) => void, onConnection?: (connected: boolean) => void): () => void {
    this.listener = listener;
    this.onConnection = onConnection ?? null;
    if (this.current !== null) listener({ type: 'SnapshotUpdated', snapshot: this.current });
    return () => {
      this.listener = null;
      this.onConnection = null;
    };
  }

  /** Delivers an event as the daemon would; a SnapshotUpdated also becomes the current snapshot. */
  emit(event: AdminEvent): void {
    if (event.type === 'SnapshotUpdated') this.current = event.snapshot;
    this.listener?.(event);
  }

  setConnected(connected: boolean): void {
    this.onConnection?.(connected);
  }

  get subscribed(): boolean {
    return this.listener !== null;
  }
}
