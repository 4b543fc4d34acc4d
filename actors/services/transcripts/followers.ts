import type { Transport } from '../../../transport/port.js';
import { Nudges } from '../nudges.js';
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
  private readonly nudges: Nudges;

  constructor(transport: Transport, log: Logger) {
    this.nudges = new Nudges(transport, log, [
      {
        pattern: TRANSCRIPT_PATTERN,
        channelOf: (topic) => {
          const [, orgId, , sessionId] = topic.split('.');
          return orgId && sessionId ? channelOf(orgId, sessionId) : undefined;
        },
      },
      {
        pattern: SESSION_CHANGED_PATTERN,
        channelOf: (topic, event) => {
          const orgId = topic.split('.')[1];
          const sessionId = (event as { sessionId?: unknown } | null)?.sessionId;
          return orgId && typeof sessionId === 'string' ? channelOf(orgId, sessionId) : undefined;
        },
      },
    ]);
  }

  /** Subscriptions are made when the first follower needs them (`ready`), not at start. */
  start(): void {}

  /** Resolves once this node hears nudges; a follower awaits it before its first read, so no nudge falls between. */
  ready(): Promise<void> {
    return this.nudges.ready();
  }

  /** Calls `wake` whenever the session's transcript may have grown; the returned function stops it. */
  follow(orgId: string, sessionId: string, wake: () => void): () => void {
    return this.nudges.listen(channelOf(orgId, sessionId), wake);
  }

  /** Followers on this session now: the node's count, for tests and metrics. */
  followersOf(orgId: string, sessionId: string): number {
    return this.nudges.listenersOf(channelOf(orgId, sessionId));
  }

  /** Tells every node's followers of the session that its transcript grew to `lastSeq`. Never fails the caller. */
  announce(orgId: string, sessionId: string, lastSeq: number): void {
    this.nudges.publish(transcriptTopic(orgId, sessionId), { sessionId, lastSeq }, 'a transcript nudge');
  }

  stop(): Promise<void> {
    return this.nudges.stop();
  }
}

/** The node's transcript followers (`deps.services.transcripts`). */
export const transcriptFollowers = (deps: Pick<Deps, 'services'>): TranscriptFollowers => deps.services.transcripts;
