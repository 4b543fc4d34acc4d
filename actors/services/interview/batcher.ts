import { randomBytes } from 'node:crypto';
import type { Deps } from '../deps.js';
import type { NodeService } from '../node-service.js';
import { streamTopics, type InterviewFrame } from '../fleet/node-streams.js';

/**
 * Interview token deltas (spec 4.8 and 8, decision 0012). Tokens posted by a worker are buffered per (org,
 * interview) on the node that received them and published as frames: a frame goes out as soon as 20 tokens are
 * waiting, and tokens never wait longer than 100 ms after the first of them arrived. One node publishes its frames
 * of one interview in order (the transport keeps a publisher's order), and `seq` numbers them.
 *
 * Frame id: `<node tag>.<frame counter>`, unique across nodes (the tag is random per process), so a stream resuming with
 * `Last-Event-ID` finds its place in any node's history.
 */
export const MAX_TOKENS_PER_FRAME = 20;
export const MAX_FRAME_DELAY_MS = 100;
/** Interviews whose `seq` a node remembers; beyond this the coldest restarts at 1 (frame ids stay unique). */
const MAX_TRACKED_INTERVIEWS = 10_000;

interface Pending {
  readonly orgId: string;
  readonly interviewId: string;
  tokens: string[];
  timer: NodeJS.Timeout | undefined;
}

export class InterviewBatcher implements NodeService {
  readonly name = 'interview-deltas';
  private readonly pending = new Map<string, Pending>();
  private readonly seqs = new Map<string, number>();
  private readonly tag = randomBytes(4).toString('hex');
  /** Node-wide, so ids stay unique even when an interview's `seq` restarts after being forgotten. */
  private frames = 0;
  /** Frames handed to the transport and not yet confirmed: shutdown waits for them before the transport closes. */
  private readonly publishing = new Set<Promise<void>>();

  constructor(
    private readonly publish: (topic: string, frame: InterviewFrame & { id: string }) => Promise<void>,
    private readonly now: () => number,
    private readonly onPublishError: (err: unknown) => void,
  ) {}

  add(orgId: string, interviewId: string, tokens: readonly string[]): void {
    if (tokens.length === 0) return;
    const key = `${orgId}/${interviewId}`;
    let p = this.pending.get(key);
    if (!p) {
      p = { orgId, interviewId, tokens: [], timer: undefined };
      this.pending.set(key, p);
    }
    p.tokens.push(...tokens);
    while (p.tokens.length >= MAX_TOKENS_PER_FRAME) this.emit(key, p, p.tokens.splice(0, MAX_TOKENS_PER_FRAME));
    if (p.tokens.length === 0) {
      this.drop(key, p);
    } else if (p.timer === undefined) {
      const waiting = p;
      p.timer = setTimeout(() => {
        waiting.timer = undefined;
        if (waiting.tokens.length > 0) this.emit(key, waiting, waiting.tokens.splice(0));
        this.drop(key, waiting);
      }, MAX_FRAME_DELAY_MS);
      p.timer.unref();
    }
  }

  /** Nothing to start: timers exist only while tokens wait. */
  start(): void {}

  /**
   * The node's shutdown (before the transport closes): what is buffered goes out now, and the frames on their way
   * are confirmed, so tokens posted in the last 100 ms before a shutdown still reach live viewers.
   */
  async stop(): Promise<void> {
    this.flushAll();
    await Promise.allSettled([...this.publishing]);
  }

  /** Publishes whatever is buffered now (shutdown). */
  flushAll(): void {
    for (const [key, p] of [...this.pending]) {
      if (p.tokens.length > 0) this.emit(key, p, p.tokens.splice(0));
      this.drop(key, p);
    }
  }

  private drop(key: string, p: Pending): void {
    if (p.timer !== undefined) clearTimeout(p.timer);
    p.timer = undefined;
    if (this.pending.get(key) === p) this.pending.delete(key);
  }

  private emit(key: string, p: Pending, tokens: string[]): void {
    const seq = (this.seqs.get(key) ?? 0) + 1;
    this.seqs.delete(key);
    this.seqs.set(key, seq);
    if (this.seqs.size > MAX_TRACKED_INTERVIEWS) this.seqs.delete(this.seqs.keys().next().value!);
    const frame = { id: `${this.tag}.${++this.frames}`, interviewId: p.interviewId, seq, tokens, at: new Date(this.now()).toISOString() };
    const published = this.publish(streamTopics.interviewFrame(p.orgId, p.interviewId), frame).catch(this.onPublishError);
    this.publishing.add(published);
    void published.finally(() => this.publishing.delete(published));
  }
}

/** The node's interview batcher (`deps.services.interviews`). */
export const interviewBatcher = (deps: Pick<Deps, 'services'>): InterviewBatcher => deps.services.interviews;

/** Builds the node's batcher, publishing through the transport. */
export function createInterviewBatcher(deps: Pick<Deps, 'log' | 'clock' | 'transport'>): InterviewBatcher {
  const log = deps.log.child({ component: 'interview-deltas' });
  return new InterviewBatcher(
    (topic, frame) => deps.transport.publish(topic, frame),
    () => deps.clock.now(),
    (err) => log.warn({ err }, 'an interview frame could not be published; its tokens are lost to live viewers'),
  );
}

/** Interview ids are one topic word: no dots or wildcards, bounded length. */
export const interviewIdPattern = /^[A-Za-z0-9_-]{1,64}$/;
