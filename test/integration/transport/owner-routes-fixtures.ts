// The world of the owner-routed ask tests (amqp.owner-routes*.test.ts): nodes on a topology of the test's own, whose
// handlers record what they ran, can be held at a gate or made to crash, and the helpers that teach an asker a holder.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { shardOf } from '../../../transport/shards.js';
import type { AmqpTransport, AmqpTransportOptions } from '../../../transport/amqp/transport.js';
import { eventually, startAmqpTransport, testPrefix, type StartedTransport } from '../../support/transport.js';

export const SHARDS = 4;
export const DELIVERY_LIMIT = 2;
export const ASK = { timeoutMs: 5_000 };

export const ROUTED = 'troupe_transport_routed_asks_total';
export const FORWARDED = 'troupe_transport_forwarded_asks_total';
export const REROUTED = 'troupe_transport_rerouted_asks_total';
export const ASK_MESSAGES = 'troupe_transport_ask_messages_total';

/** `count` addresses named `<prefix>/<i>` that all live on `shard`. */
export function addressesOn(shard: number, prefix: string, count: number): string[] {
  const found: string[] = [];
  for (let i = 0; found.length < count; i += 1) if (shardOf(`${prefix}/${i}`, SHARDS) === shard) found.push(`${prefix}/${i}`);
  return found;
}

export const on = (shard: number, prefix: string) => addressesOn(shard, prefix, 1)[0]!;

export async function counter(registry: Registry, name: string): Promise<number> {
  return (await registry.getSingleMetric(name)!.get()).values.reduce((sum, v) => sum + v.value, 0);
}

export async function deliveries(registry: Registry, outcome: string): Promise<number> {
  return (await registry.getSingleMetric('troupe_transport_deliveries_total')!.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

/** Whether `promise` has settled once pending callbacks have run. */
export async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true), () => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface Node {
  readonly id: string;
  /** What its handler answers as `node`. */
  readonly name: string;
  readonly started: StartedTransport<AmqpTransport>;
  readonly transport: AmqpTransport;
  readonly registry: Registry;
}

/** A message a handler ran, as `seen` lists them. */
export interface Handled { readonly node: string; readonly address: string; readonly n: number | undefined }

export interface Answer {
  readonly node: string;
  readonly address: string;
  readonly n: number | undefined;
}

/**
 * Registers the suite's `beforeEach` (a fresh topology prefix, no nodes, nothing seen) and `afterEach` (the gate
 * opened, every node stopped); the state is read once `beforeEach` ran.
 * Handlers: `hold: true` waits at the gate until `openGate()`; addresses `crash/…` throw; `record/…` pause at random,
 * so a later message would overtake an earlier one if nothing kept the address's turn.
 */
export function ownerRoutesWorld() {
  let prefix: string;
  let nodes: Node[];
  /** Messages handled, in the order their handlers finished; per address that is the order they ran. */
  let seen: Handled[];
  /** Handler entries per address, crashes included. */
  let attempts: Map<string, number>;
  /** Addresses whose handler is waiting at the gate. */
  let holding: Set<string>;
  let gate: Promise<void>;
  let openGate: () => void;
  let forwardedBase: Map<string, number>;

  const handlerFor = (node: string) => async (address: string, message: unknown) => {
    const { n, hold } = (message ?? {}) as { n?: number; hold?: boolean };
    attempts.set(address, (attempts.get(address) ?? 0) + 1);
    if (address.startsWith('crash/')) throw new Error('handler bug');
    if (hold) {
      holding.add(address);
      await gate;
      holding.delete(address);
    }
    // A random pause lets a later message overtake an earlier one if nothing keeps the address's turn.
    if (address.startsWith('record/')) await pause(Math.random() * 2);
    seen.push({ node, address, n });
    return { node, address, n } satisfies Answer;
  };

  /** Starts a node on this test's topology; every node declares the shard queues with the same delivery limit. */
  async function startNode(name: string, options: Partial<AmqpTransportOptions> = {}): Promise<Node> {
    const id = `routes-${name}-${randomBytes(3).toString('hex')}`;
    const registry = new Registry();
    const started = await startAmqpTransport(handlerFor(name), {
      prefix, shardCount: SHARDS, deliveryLimit: DELIVERY_LIMIT, nodeId: id, metrics: registry, ...options,
    });
    const node = { id, name, started, transport: started.transport, registry };
    nodes.push(node);
    return node;
  }

  /** B holds every shard; A holds none and asks. */
  async function askerAndHolder(a: Partial<AmqpTransportOptions> = {}, b: Partial<AmqpTransportOptions> = {}): Promise<{ a: Node; b: Node }> {
    const holder = await startNode('b', b);
    const asker = await startNode('a', { ownedShards: [], ...a });
    return { a: asker, b: holder };
  }

  /**
   * Makes `a` learn `b` as the holder of `shard`: an ask through the queue, b's proof that it holds the shard (its
   * seal marker back; until then it forwards routed asks), then one that must take b's inbox and run there. The
   * forwards counted so far become every node's baseline for `forwardedBy`.
   */
  async function learnHolder(a: Node, shard: number): Promise<void> {
    const address = on(shard, 'warmup');
    const first = await a.transport.ask<Answer>(address, { n: 0 }, ASK);
    expect(first.node).to.equal('b');
    await provenHolder('b', shard);
    const routed = await counter(a.registry, ROUTED);
    const second = await a.transport.ask<Answer>(address, { n: 1 }, ASK);
    expect(second.node).to.equal('b');
    expect(await counter(a.registry, ROUTED), `asks to shard ${shard} routed to b`).to.equal(routed + 1);
    for (const node of nodes) forwardedBase.set(node.id, await counter(node.registry, FORWARDED));
  }

  async function provenHolder(name: string, shard: number): Promise<void> {
    const node = nodes.find((n) => n.name === name)!;
    await eventually(() => node.transport.shardStatus().proven.includes(shard), `${name} proven holder of shard ${shard}`, 5_000);
  }

  /** Routed asks `node` forwarded since the last `learnHolder`. */
  const forwardedBy = async (node: Node) => (await counter(node.registry, FORWARDED)) - (forwardedBase.get(node.id) ?? 0);

  const order = (address: string) => seen.filter((s) => s.address === address).map((s) => s.n);

  beforeEach(() => {
    prefix = testPrefix();
    nodes = [];
    seen = [];
    attempts = new Map();
    holding = new Set();
    forwardedBase = new Map();
    gate = new Promise((resolve) => (openGate = resolve));
  });

  afterEach(async () => {
    openGate();
    // Every node stops before any of them deletes the shared topology under the others.
    for (const node of nodes) await node.transport.close();
    for (const node of nodes) await node.started.close();
  });

  return {
    get prefix() { return prefix; },
    get seen() { return seen; },
    get attempts() { return attempts; },
    get holding() { return holding; },
    openGate: () => openGate(),
    startNode, askerAndHolder, learnHolder, provenHolder, forwardedBy, order,
  };
}
