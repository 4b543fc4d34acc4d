import type { Transport, Unsubscribe } from '../../../transport/port.js';
import type { Logger } from '../../../ops/kernel/logger.js';
import type { NodeService } from '../node-service.js';
import type { Deps } from '../deps.js';

/**
 * Who on this node follows which session's transcript, and the nudges that wake them (issue 35 §1, decision 0084).
 *
 * A nudge carries no entries, only "this session's transcript grew (to `lastSeq`)": followers read the entries from
 * storage, after the last `seq` they sent. So the live stream and the stored transcript cannot disagree: a client
 * that read the transcript up to N and follows from N gets exactly the entries after N, once each, in order, however
 * nudges cross nodes, arrive twice or late. A lost nudge costs latency only: followers also look every
 * `FOLLOW_POLL_MS` (the session-changed events of the org wake them on a status change as well).
 *
 * Writers announce after their entries are committed (the relay of a worker's output and tool steps, a prompt); the
 * session actor's status entries are written with its transition and announced by its session-changed event.
 */
export const FOLLOW_POLL_MS = 2000;

export const transcriptTopic = (orgId: string, sessionId: string): string => `org.${orgId}.transcript.${sessionId}`;
const TRANSCRIPT_PATTERN = 'org.*.transcript.*';
const SESSION_CHANGED_PATTERN = 'org.*.session.changed';

const channelOf = (orgId: string, sessionId: string): string => `${orgId}/${sessionId}`;

export class TranscriptFollowers implements NodeService {
  readonly name = 'transcript-followers';
  private readonly wakers = new Map<string, Set<() => void>>();
  private subscribing: Promise<void> | undefined;
  private readonly unsubscribes: Unsubscribe[] = [];

  constructor(private readonly transport: Transport, private readonly log: Logger) {}

  /** Subscriptions are made when the first follower needs them (`ready`), not at start. */
  start(): void {}

  /** Resolves once this node hears nudges; a follower awaits it before its first read, so no nudge falls between. */
  ready(): Promise<void> {
    this.subscribing ??= (async () => {
      this.unsubscribes.push(await this.transport.subscribe(TRANSCRIPT_PATTERN, (topic, event) => {
        const [, orgId, , sessionId] = topic.split('.');
        if (orgId && sessionId) this.wake(channelOf(orgId, sessionId));
        void event;
      }));
      this.unsubscribes.push(await this.transport.subscribe(SESSION_CHANGED_PATTERN, (topic, event) => {
        const orgId = topic.split('.')[1];
        const sessionId = (event as { sessionId?: unknown } | null)?.sessionId;
        if (orgId && typeof sessionId === 'string') this.wake(channelOf(orgId, sessionId));
      }));
    })().catch((err: unknown) => {
      this.subscribing = undefined;
      throw err;
    });
    return this.subscribing;
  }

  /** Calls `wake` whenever the session's transcript may have grown; the returned function stops it. */
  follow(orgId: string, sessionId: string, wake: () => void): () => void {
    const channel = channelOf(orgId, sessionId);
    let set = this.wakers.get(channel);
    if (!set) this.wakers.set(channel, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0 && this.wakers.get(channel) === set) this.wakers.delete(channel);
    };
  }

  /** Followers on this session now: the node's count, for tests and metrics. */
  followersOf(orgId: string, sessionId: string): number {
    return this.wakers.get(channelOf(orgId, sessionId))?.size ?? 0;
  }

  /** Tells every node's followers of the session that its transcript grew to `lastSeq`. Never fails the caller. */
  announce(orgId: string, sessionId: string, lastSeq: number): void {
    this.transport.publish(transcriptTopic(orgId, sessionId), { sessionId, lastSeq }).catch((err: unknown) => {
      this.log.warn({ err, sessionId }, 'a transcript nudge could not be published; followers see the entries at their next look');
    });
  }

  async stop(): Promise<void> {
    const unsubscribes = this.unsubscribes.splice(0);
    this.subscribing = undefined;
    await Promise.allSettled(unsubscribes.map((u) => u()));
    this.wakers.clear();
  }

  private wake(channel: string): void {
    const set = this.wakers.get(channel);
    if (!set) return;
    for (const wake of [...set]) {
      try {
        wake();
      } catch (err) {
        this.log.warn({ err }, 'a transcript follower failed');
      }
    }
  }
}

/** The node's transcript followers (`deps.services.transcripts`). */
export const transcriptFollowers = (deps: Pick<Deps, 'services'>): TranscriptFollowers => deps.services.transcripts;
