import type { Logger } from '../../ops/kernel/logger.js';

/**
 * What the broker itself says about the shard queues, read from the RabbitMQ management API: which consumer is
 * the single active one on each shard queue, and how many messages wait. It is RabbitMQ's own truth but lags by
 * the broker's statistics interval (5 s by default), so it corrects what deliveries already told us rather than
 * replacing it. Optional: without the management plugin a node learns it holds a shard from its first delivery.
 */
export interface BrokerView {
  /** Consumer tags the broker reports as the single active consumer of a queue. */
  readonly activeTags: ReadonlySet<string>;
  /** Queue name → messages ready plus unacknowledged. */
  readonly depth: ReadonlyMap<string, number>;
  readonly observedAt: number;
}

export interface BrokerViewOptions {
  /** http://user:pass@host:15672 */
  readonly managementUrl: string;
  readonly vhost: string;
  /** Only queues whose name starts with this are read (`troupe.shard.`). */
  readonly queuePrefix: string;
  readonly log: Logger;
  /** @default 2000 */
  readonly timeoutMs?: number;
}

interface ConsumerRow {
  consumer_tag?: unknown;
  active?: unknown;
  activity_status?: unknown;
  queue?: { name?: unknown };
}

interface QueueRow {
  name?: unknown;
  messages_ready?: unknown;
  messages_unacknowledged?: unknown;
}

export { managementUrlFor, vhostOf } from '../amqp/management-api.js';

export async function readBrokerView(options: BrokerViewOptions): Promise<BrokerView> {
  const base = new URL(options.managementUrl);
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}`;
  const origin = `${base.protocol}//${base.host}`;
  const vhost = encodeURIComponent(options.vhost);
  const get = async (path: string): Promise<unknown> => {
    const res = await fetch(`${origin}${path}`, { headers: { authorization }, signal: AbortSignal.timeout(options.timeoutMs ?? 2_000) });
    if (!res.ok) throw new Error(`management API ${path} answered ${res.status}`);
    return res.json();
  };
  const [consumers, queues] = await Promise.all([
    // Only the three fields read below: a full consumer row is about a kilobyte (channel details, arguments), and on a
    // broker shared by many nodes the list parsed every two seconds was a few per cent of a busy node's CPU (decision 0057).
    get(`/api/consumers/${vhost}?columns=consumer_tag,activity_status,queue.name`),
    get(`/api/queues/${vhost}?columns=name,messages_ready,messages_unacknowledged`),
  ]);
  const activeTags = new Set<string>();
  for (const row of Array.isArray(consumers) ? (consumers as ConsumerRow[]) : []) {
    const queue = row.queue?.name;
    if (typeof queue !== 'string' || !queue.startsWith(options.queuePrefix) || typeof row.consumer_tag !== 'string') continue;
    if (row.activity_status === 'single_active') activeTags.add(row.consumer_tag);
  }
  const depth = new Map<string, number>();
  for (const row of Array.isArray(queues) ? (queues as QueueRow[]) : []) {
    if (typeof row.name !== 'string' || !row.name.startsWith(options.queuePrefix)) continue;
    const ready = typeof row.messages_ready === 'number' ? row.messages_ready : 0;
    const unacked = typeof row.messages_unacknowledged === 'number' ? row.messages_unacknowledged : 0;
    depth.set(row.name, ready + unacked);
  }
  return { activeTags, depth, observedAt: Date.now() };
}
