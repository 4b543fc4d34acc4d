import type { Unsubscribe } from '../../../transport/port.js';
import type { NodeService } from '../node-service.js';
import type { Deps } from '../deps.js';
import { ChannelFanout, type StampedEvent } from './channel-fanout.js';

/**
 * The event streams of decision 0012, as one node sees them. Publishers put events on the transport's topics;
 * every node subscribes to each topic pattern once (not once per client) and fans events out to its own SSE
 * clients through a `ChannelFanout`. Channels always include the org, so a client can only ever be attached to
 * its own org's channels.
 */
export const streamTopics = {
  sessionChanged: (orgId: string) => `org.${orgId}.session.changed`,
  interviewFrame: (orgId: string, interviewId: string) => `org.${orgId}.interview.${interviewId}.frame`,
  credentialRotated: (orgId: string) => `org.${orgId}.credentials.rotated`,
} as const;

const patterns = {
  sessionChanged: 'org.*.session.changed',
  interviewFrame: 'org.*.interview.*.frame',
  credentialRotated: 'org.*.credentials.rotated',
} as const;

/** A session's status change (frame of `GET /api/sessions/events`). */
export interface SessionEvent {
  readonly sessionId: string;
  readonly orgId: string;
  readonly projectId: string;
  readonly previousStatus: string;
  readonly status: string;
  readonly epoch: number;
  /** ISO 8601, when the actor decided the change. */
  readonly at: string;
}

/** A batch of interview tokens (frame of `GET /api/interview/{id}/stream`). */
export interface InterviewFrame {
  readonly interviewId: string;
  /** Position of this frame among those its ingesting node published for the interview. */
  readonly seq: number;
  readonly tokens: readonly string[];
  readonly at: string;
}

/** A rotation as it crosses the broker: the value is sealed, so plaintext credentials never sit in a queue. */
export interface SealedRotation {
  readonly orgId: string;
  readonly kind: string;
  readonly sealedValue: string;
  readonly rotatedAt: string;
}

export const rotationSealContext = (orgId: string, kind: string, rotatedAt: string): string => `rotation:${orgId}:${kind}:${rotatedAt}`;

export interface NodeStreams {
  readonly sessions: ChannelFanout<SessionEvent>;
  /** Channel `<orgId>/<interviewId>`. */
  readonly interviews: ChannelFanout<InterviewFrame>;
  readonly credentials: ChannelFanout<SealedRotation>;
  /** Resolves once this node is subscribed to every stream topic; SSE routes await it before attaching a client. */
  ready(): Promise<void>;
}

export const interviewChannel = (orgId: string, interviewId: string): string => `${orgId}/${interviewId}`;

/**
 * What a node keeps of interview frames for resuming clients (issue 30): 256 KiB per interview (200 frames of
 * ordinary tokens fit in a tenth of it), 8 MiB per org over at most 200 interviews, 32 MiB in all. A worker posting
 * megabytes of tokens only shortens its own interviews' history.
 */
export const INTERVIEW_HISTORY_BYTES = {
  ringBytes: 256 * 1024, orgBytes: 8 * 1024 * 1024, totalBytes: 32 * 1024 * 1024, maxChannelsPerOrg: 200,
} as const;

/** A frame's tokens at two bytes a character (V8's widest strings), plus a small cost per token. */
export function frameBytes(frame: InterviewFrame): number {
  let bytes = 0;
  for (const token of frame.tokens) bytes += 2 * token.length + 16;
  return bytes;
}

/** The node's stream fan-out (`deps.services.streams`). */
export const nodeStreams = (deps: Pick<Deps, 'services'>): NodeStreams => deps.services.streams;

const isString = (v: unknown): v is string => typeof v === 'string';
const orgOfTopic = (topic: string): string | undefined => topic.split('.')[1];

/**
 * Builds the node's fan-out. It subscribes to the stream topics when the first SSE client needs them (`ready`) and
 * lets go of those subscriptions when the node stops it.
 */
export function createNodeStreams(deps: Pick<Deps, 'log' | 'transport'>): NodeStreams & NodeService {
  const log = deps.log.child({ component: 'node-streams' });
  const onListenerError = (err: unknown) => log.warn({ err }, 'stream listener failed');
  // Sizes: 500 session changes per org cover a reconnect after minutes of a busy org; they are small, fixed-shape
  // events made by actors (not chosen by clients), so counts bound them. 200 frames per interview cover a few seconds
  // of tokens, and are bounded in bytes too (INTERVIEW_HISTORY_BYTES): workers choose the interview ids and the tokens.
  const sessions = new ChannelFanout<SessionEvent>({ ringSize: 500, maxChannels: 1000 });
  const interviews = new ChannelFanout<InterviewFrame>({ ringSize: 200, maxChannels: 2000, ...INTERVIEW_HISTORY_BYTES, sizeOf: frameBytes });
  const credentials = new ChannelFanout<SealedRotation>({ ringSize: 0, maxChannels: 10_000 });

  // Each handler trusts only what the topic says about the org: an event whose body names another org is dropped.
  const handlers = {
    sessionChanged(topic: string, event: unknown) {
      const e = event as Partial<SessionEvent> & { id?: unknown; reset?: unknown };
      const orgId = orgOfTopic(topic);
      // A node could not publish some of this org's events: its streams reload (actors/kinds/session/session-events.ts).
      if (e?.reset === true && e.orgId === orgId && orgId !== undefined) {
        sessions.lost(orgId, onListenerError);
        return;
      }
      if (!isString(e?.id) || e.orgId !== orgId || !isString(e.sessionId) || !isString(e.status)) return;
      const { id, ...data } = e as SessionEvent & { id: string };
      sessions.deliver(orgId!, { id, data }, onListenerError);
    },
    interviewFrame(topic: string, event: unknown) {
      const e = event as Partial<InterviewFrame> & { id?: unknown };
      const [, orgId, , interviewId] = topic.split('.');
      if (!isString(e?.id) || !orgId || !interviewId || e.interviewId !== interviewId || !Array.isArray(e.tokens)) return;
      const { id, ...data } = e as InterviewFrame & { id: string };
      interviews.deliver(interviewChannel(orgId, interviewId), { id, data }, onListenerError);
    },
    credentialRotated(topic: string, event: unknown) {
      const e = event as Partial<SealedRotation>;
      const orgId = orgOfTopic(topic);
      if (e?.orgId !== orgId || !isString(e.kind) || !isString(e.sealedValue) || !isString(e.rotatedAt)) return;
      credentials.deliver(orgId!, { id: `${e.rotatedAt}.${e.kind}`, data: e as SealedRotation }, onListenerError);
    },
  };

  // Events lost on their way here (the node's event queue overflowed): the streams of that topic's channel reload.
  const lostOn = (topic: string) => {
    const [, orgId, kind, interviewId] = topic.split('.');
    if (!orgId) return;
    if (kind === 'session') sessions.lost(orgId, onListenerError);
    else if (kind === 'interview' && interviewId) interviews.lost(interviewChannel(orgId, interviewId), onListenerError);
    else if (kind === 'credentials') credentials.lost(orgId, onListenerError);
  };
  let stopHearingLosses: (() => void) | undefined;

  // Each pattern is subscribed once; a failed one is retried by the next client, the others are kept.
  const done = new Set<keyof typeof patterns>();
  let subscribing: Promise<void> | undefined;
  const unsubscribers: Unsubscribe[] = [];
  const ready = (): Promise<void> => {
    if (done.size === Object.keys(patterns).length) return Promise.resolve();
    subscribing ??= (async () => {
      try {
        for (const k of Object.keys(patterns) as (keyof typeof patterns)[]) {
          if (done.has(k)) continue;
          unsubscribers.push(await deps.transport.subscribe(patterns[k], handlers[k]));
          done.add(k);
        }
      } finally {
        subscribing = undefined;
      }
    })();
    return subscribing;
  };
  return {
    name: 'node-streams', sessions, interviews, credentials, ready,
    start() {
      stopHearingLosses = deps.transport.onEventsLost(lostOn);
    },
    async stop() {
      stopHearingLosses?.();
      await subscribing?.catch(() => undefined);
      await Promise.all(unsubscribers.splice(0).map((u) => u().catch((err: unknown) => log.warn({ err }, 'could not unsubscribe a stream topic'))));
    },
  };
}

export type { StampedEvent };
