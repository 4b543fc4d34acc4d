import type { Channel, ChannelModel } from 'amqplib';
import { declareTopology, type Topology } from './topology.js';

/**
 * Declares a topology over several channels at once, for reconnects (issue 20: "first confirmed publish ≤ 5 s after
 * the broker is back"). amqplib sends a channel's synchronous methods one after another, each waiting for its reply,
 * so declaring on one channel costs a round trip per exchange, queue and binding (25 for 8 shards). A round trip is
 * cheap on an idle node, but a node busy serving the requests that piled up while the broker was away reads each
 * reply a whole event-loop turn later: setup took 6.7 s after a broker restart under 2,000 heartbeats/s offered.
 * Spread over channels, the replies to many declarations arrive together and are read in the same turn.
 *
 * Same order and rules as `declareTopology` (exchanges, queues, bindings): the queues that may predate their
 * current arguments go through `declareTopology` itself, a share of them per channel, so its fallback for an older
 * queue (one by one on scratch channels) is unchanged. Any other refusal rejects, and the caller's setup fails and
 * recovery tries again, as on one channel.
 */
export const DECLARE_CHANNELS = 8;

export async function declareTopologyInParallel(
  model: ChannelModel, topology: Topology,
  /** More bindings of the same connection (the event patterns this node subscribes to), made with the topology's. */
  bindMore: (channels: readonly Channel[]) => Promise<void> = async () => undefined,
  channels = DECLARE_CHANNELS,
): Promise<{ predating: string[] }> {
  const scratch = () => model.createChannel();
  const opened = await Promise.all(Array.from({ length: channels }, scratch));
  // A refused declaration closes its channel with an error; the rejection of the declaration is what we act on.
  for (const channel of opened) channel.on('error', () => undefined);
  const spread = <T>(items: readonly T[], declare: (channel: Channel, item: T) => Promise<unknown>) =>
    Promise.all(items.map((item, i) => declare(opened[i % opened.length]!, item)));
  try {
    await spread(topology.exchanges, (channel, e) => channel.assertExchange(e.name, e.type, { durable: e.durable }));
    const older = topology.queues.filter((q) => q.mayPredate);
    const shares = opened.map((_, i) => older.filter((_q, j) => j % opened.length === i)).filter((share) => share.length > 0);
    const [predating] = await Promise.all([
      Promise.all(shares.map((queues, i) => declareTopology(opened[i]!, { exchanges: [], queues, bindings: [] }, scratch)))
        .then((answers) => answers.flatMap((a) => a.predating)),
      spread(topology.queues.filter((q) => !q.mayPredate), (channel, q) =>
        channel.assertQueue(q.name, { durable: q.durable, exclusive: q.exclusive, autoDelete: q.autoDelete, arguments: { ...q.arguments } })),
    ]);
    await Promise.all([spread(topology.bindings, (channel, b) => channel.bindQueue(b.queue, b.exchange, b.routingKey)), bindMore(opened)]);
    return { predating };
  } finally {
    // Not awaited: a close is one more round trip nobody needs to wait for.
    for (const channel of opened) channel.close().catch(() => undefined);
  }
}
