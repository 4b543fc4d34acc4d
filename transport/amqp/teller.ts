import { ChurnMap } from '../../ops/kernel/churn-map.js';
import { shardOf } from '../shards.js';
import { createEnvelope, encodeEnvelope, assertAddress } from '../envelope.js';
import type { TopologyNames } from './topology.js';
import type { BrokerConnection } from './connection.js';
import type { ShortcutGate } from './shortcut.js';
import type { OwnerRoutes } from './owner-routes.js';

/**
 * The order of one sender's tells and owner-routed asks to an address. A tell takes the queue; asks to its address
 * still outstanding on a holder's inbox must be answered first, or it could overtake them, and asks made while it
 * waits go after it.
 */
export class TellTurns {
  /** Address → resolves once a tell to it, waiting for earlier routed asks, has been published (`tell`). */
  private readonly turns = new ChurnMap<string, Promise<void>>();

  constructor(private readonly routes: OwnerRoutes) {}

  /** The turn of a tell to `address` that an ask made now must wait for; undefined when none is waiting. */
  of(address: string): Promise<void> | undefined {
    return this.turns.get(address);
  }

  /**
   * Undefined when nothing is outstanding on an inbox for `address`. Otherwise resolves, once the tell may go, to
   * the function the tell calls after publishing; asks made meanwhile wait for that (`of`), so one sender's order
   * holds.
   */
  take(address: string): Promise<() => void> | undefined {
    const earlierTell = this.turns.get(address);
    if (earlierTell === undefined && !this.routes.hasRoutedAsks(address)) return undefined;
    let resolveTurn!: () => void;
    const turn = new Promise<void>((resolve) => (resolveTurn = resolve));
    this.turns.set(address, turn);
    const published = () => {
      resolveTurn();
      if (this.turns.get(address) === turn) this.turns.delete(address);
    };
    return (async () => {
      await earlierTell;
      await this.routes.offInboxes(address);
      return published;
    })();
  }
}

export interface TellerOptions {
  readonly nodeId: string;
  readonly shardCount: number;
  readonly tellTtlMs: number;
  readonly names: TopologyNames;
  readonly link: BrokerConnection;
  readonly gate: ShortcutGate;
  readonly routes: OwnerRoutes;
  readonly turns: TellTurns;
  /** Sends this turn's asks to the shard now: a tell must not overtake asks made before it in the same turn. */
  readonly flushAsks: (shard: number) => void;
}

/** Tells: always through the shard queue, confirmed, so that a tell is durable when it resolves. */
export class Teller {
  constructor(private readonly options: TellerOptions) {}

  async tell(address: string, message: unknown): Promise<void> {
    const { nodeId, shardCount, tellTtlMs, names, link, gate, routes, turns, flushAsks } = this.options;
    const session = link.liveSession();
    assertAddress(address);
    const envelope = createEnvelope({ type: 'tell', to: address, from: nodeId, deadline: Date.now() + tellTtlMs, payload: message });
    const shard = shardOf(address, shardCount);
    const body = encodeEnvelope(envelope);
    // Not awaited unless it must wait: a tell publishes in the caller's turn, ahead of asks made after it.
    const turn = turns.take(address);
    const release = turn === undefined ? undefined : await turn;
    let confirmed: Promise<void>;
    try {
      const live = release === undefined ? session : link.liveSession();
      flushAsks(shard);
      gate.tellSent(shard, address, envelope.id);
      routes.tellSent(shard);
      confirmed = link.publishConfirmed(live, names.shardExchange, String(shard), body, { persistent: true, messageId: envelope.id, type: 'tell' });
    } finally {
      release?.();
    }
    try {
      await confirmed;
    } catch (err) {
      // Unconfirmed: it may still arrive, but an ask no longer waits for it (it would wait for nothing if it never does).
      gate.tellDone(envelope.id);
      throw err;
    }
  }
}
