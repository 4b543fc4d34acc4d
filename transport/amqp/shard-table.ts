/**
 * Each shard's life on this node, as one explicit state table (ops/decisions/0035-transport-in-pieces.md). Pure
 * bookkeeping; shard-ownership.ts feeds it from the broker.
 *
 * - released: not wanted here, no consumer.
 * - wanted: this node wants a consumer on it (placement asked, `consumeShard`), but has none on this connection
 *   (disconnected, or not subscribed yet).
 * - standby: our consumer is on its queue; with single-active-consumer another node's may be the active one.
 * - holding: ours is the active consumer, proven by a delivery or the broker's consumer list (`provenAt`). Whether
 *   it is also *sealed* (our own marker came back, so routed and in-process asks may run here) is the shortcut
 *   gate's business (shortcut.ts); leaving `holding` drops the seal.
 * - handing-over: released while consuming: deliveries arriving meanwhile are parked unacked, the ones already
 *   running finish (`inFlight` drains to zero), then the consumer is cancelled and the parked ones go back.
 *
 * A pair missing from the table is refused: the event changes nothing, and the caller, told so, does what the
 * refusal means for it (a proof for a shard not consumed is ignored; a second release waits its turn).
 */
export const SHARD_PHASES = ['released', 'wanted', 'standby', 'holding', 'handing-over'] as const;
export type ShardPhase = (typeof SHARD_PHASES)[number];

export const SHARD_EVENTS = ['want', 'consume', 'consume-failed', 'proof', 'stale', 'release', 'handed-over', 'lost'] as const;
/**
 * - want: placement gives the shard to this node.
 * - consume: a consumer is being made on the current connection (recorded before the broker confirms it: amqplib
 *   hands over deliveries that came with the confirm before the caller resumes, and they must find it consumed).
 * - consume-failed: the broker refused that consumer.
 * - proof: a delivery, a probe or the broker's consumer list says ours is the active consumer.
 * - stale: the broker's consumer list has not named ours for a while, and no delivery has proved it since.
 * - release: placement takes the shard away (`releaseShard`).
 * - handed-over: the released shard's consumer is cancelled and its parked deliveries returned.
 * - lost: the connection is gone (or a new one starts): every consumer with it.
 */
export type ShardEvent = (typeof SHARD_EVENTS)[number];

export const SHARD_TRANSITIONS: { readonly [P in ShardPhase]: { readonly [E in ShardEvent]?: ShardPhase } } = {
  released: { want: 'wanted', release: 'released', 'handed-over': 'released', lost: 'released' },
  wanted: { want: 'wanted', consume: 'standby', release: 'released', lost: 'wanted' },
  standby: { want: 'standby', 'consume-failed': 'wanted', proof: 'holding', release: 'handing-over', lost: 'wanted' },
  holding: { want: 'holding', proof: 'holding', stale: 'standby', release: 'handing-over', lost: 'wanted' },
  // A release waits for the previous one (and a consume for it) in the shard's turn, so only its own end or the
  // connection's loss can happen now; after a loss the handover still ends, with `handed-over` in `released`.
  'handing-over': { 'handed-over': 'released', lost: 'released' },
};

/** The phase after `event`, or undefined when the table refuses it. */
export function nextPhase(phase: ShardPhase, event: ShardEvent): ShardPhase | undefined {
  return SHARD_TRANSITIONS[phase][event];
}

/** A shard being handed over: the consumer to cancel, the deliveries parked meanwhile, whether we held it. */
export interface Handover<C, M> {
  readonly consumer: C;
  readonly parked: M[];
  readonly held: boolean;
}

interface ShardLife<C, M> {
  phase: ShardPhase;
  /** standby, holding, handing-over: our consumer on the current connection. */
  consumer: C | undefined;
  /** holding: when a delivery or the broker's consumer list last proved it (epoch ms); kept while handing over. */
  provenAt: number | undefined;
  /** handing-over: deliveries that arrived meanwhile, held unacked and returned after the cancel. */
  parked: M[] | undefined;
  /** Deliveries of the shard handed to the handler and not yet settled, in any phase; a handover waits for zero. */
  inFlight: number;
  drainWaiters: Array<() => void>;
}

/** The state table applied to every shard of the cluster (`C`: a consumer, `M`: a parked delivery). */
export class ShardTable<C, M> {
  private readonly shards: ShardLife<C, M>[];

  constructor(shardCount: number, wanted: Iterable<number>) {
    this.shards = Array.from({ length: shardCount }, () => ({
      phase: 'released', consumer: undefined, provenAt: undefined, parked: undefined, inFlight: 0, drainWaiters: [],
    }));
    for (const shard of wanted) this.fire(shard, 'want');
  }

  phase(shard: number): ShardPhase {
    return this.shards[shard]!.phase;
  }

  want(shard: number): boolean {
    return this.fire(shard, 'want');
  }

  consume(shard: number, consumer: C): boolean {
    if (!this.fire(shard, 'consume')) return false;
    this.shards[shard]!.consumer = consumer;
    return true;
  }

  consumeFailed(shard: number): boolean {
    return this.fire(shard, 'consume-failed');
  }

  /** Answers whether the proof made the shard ours just now, confirmed it again, or was refused. */
  prove(shard: number, now: number): 'newly-held' | 'held' | 'refused' {
    const life = this.shards[shard]!;
    const was = life.phase;
    if (!this.fire(shard, 'proof')) return 'refused';
    life.provenAt = now;
    return was === 'holding' ? 'held' : 'newly-held';
  }

  stale(shard: number): boolean {
    return this.fire(shard, 'stale');
  }

  /** Starts the handover of a consumed shard and answers it; undefined when there is no consumer to hand over. */
  release(shard: number): Handover<C, M> | undefined {
    const life = this.shards[shard]!;
    const { consumer, provenAt } = life;
    if (!this.fire(shard, 'release') || life.phase !== 'handing-over') return undefined;
    const parked: M[] = [];
    life.parked = parked;
    return { consumer: consumer!, parked, held: provenAt !== undefined };
  }

  handedOver(shard: number): boolean {
    return this.fire(shard, 'handed-over');
  }

  /** Keeps a delivery that arrived during the shard's handover; false when the shard is not being handed over. */
  park(shard: number, delivery: M): boolean {
    const parked = this.shards[shard]!.parked;
    if (parked === undefined) return false;
    parked.push(delivery);
    return true;
  }

  /** Every consumer is gone with its connection; answers the shards we held, sorted. */
  loseAll(): number[] {
    const held = this.active();
    for (let shard = 0; shard < this.shards.length; shard++) this.fire(shard, 'lost');
    return held;
  }

  /** Ours is the active consumer and we are not handing it over. */
  holding(shard: number): boolean {
    return this.shards[shard]!.phase === 'holding';
  }

  /** We hold it, or held it when its handover began: asks to it take its queue, to us, not a holder we knew. */
  heldHere(shard: number): boolean {
    return this.shards[shard]!.provenAt !== undefined;
  }

  provenAt(shard: number): number | undefined {
    return this.shards[shard]!.provenAt;
  }

  consumer(shard: number): C | undefined {
    return this.shards[shard]!.consumer;
  }

  /** Shard → consumer, for every shard with one (standby, holding, handing-over). */
  consumers(): Map<number, C> {
    const consumers = new Map<number, C>();
    this.shards.forEach((life, shard) => life.consumer !== undefined && consumers.set(shard, life.consumer));
    return consumers;
  }

  /** Wanted shards with a consumer, sorted. */
  consuming(): number[] {
    return this.where((life) => life.phase === 'standby' || life.phase === 'holding');
  }

  /** Shards we hold, including one whose handover has begun, sorted. */
  active(): number[] {
    return this.where((life) => life.provenAt !== undefined);
  }

  /** How many shards this node wants, consumed or not. */
  wantedCount(): number {
    return this.where((life) => life.phase !== 'released' && life.phase !== 'handing-over').length;
  }

  /** The lowest wanted shard without a consumer. */
  firstWanted(): number | undefined {
    const shard = this.shards.findIndex((life) => life.phase === 'wanted');
    return shard === -1 ? undefined : shard;
  }

  /** A delivery of the shard went to the handler. */
  begin(shard: number): void {
    this.shards[shard]!.inFlight += 1;
  }

  /** It settled; the last one wakes a handover waiting for the shard to drain. */
  end(shard: number): void {
    const life = this.shards[shard]!;
    if (life.inFlight > 0) life.inFlight -= 1;
    if (life.inFlight > 0) return;
    for (const wake of life.drainWaiters.splice(0)) wake();
  }

  inFlight(shard: number): number {
    return this.shards[shard]!.inFlight;
  }

  /** Resolves once no delivery of the shard is in flight. */
  drained(shard: number): Promise<void> {
    const life = this.shards[shard]!;
    if (life.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => life.drainWaiters.push(resolve));
  }

  private where(test: (life: ShardLife<C, M>) => boolean): number[] {
    const shards: number[] = [];
    this.shards.forEach((life, shard) => test(life) && shards.push(shard));
    return shards;
  }

  private fire(shard: number, event: ShardEvent): boolean {
    const life = this.shards[shard]!;
    const next = nextPhase(life.phase, event);
    if (next === undefined) return false;
    life.phase = next;
    if (next === 'released' || next === 'wanted') {
      life.consumer = undefined;
      life.provenAt = undefined;
      life.parked = undefined;
    } else if (next === 'standby') life.provenAt = undefined;
    return true;
  }
}
