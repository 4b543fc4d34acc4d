/**
 * Started transports for tests, one of each kind, and their teardown. An AMQP transport gets its own name prefix
 * (`troupe-test-<random>`), so concurrent runs never share queues, and `close()` deletes everything it declared.
 */
import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import type { DeliveryHandler, Transport } from '../../transport/port.js';
import { LocalTransport } from '../../transport/local.js';
import { AmqpTransport, type AmqpTransportOptions } from '../../transport/amqp/transport.js';
import { deleteTopology } from '../../transport/amqp/topology.js';
import { removePolicies } from '../../transport/amqp/dead-letter-policy.js';
import { silentLogger } from '../../ops/kernel/logger.js';
import { vhostOf } from '../../transport/cluster/broker-view.js';
import { amqpManagementUrl, engines, skipEngine } from './engines.js';

export interface StartedTransport<T extends Transport = Transport> {
  readonly transport: T;
  /** Closes the transport (idempotent) and removes what it declared on the broker. */
  close(): Promise<void>;
}

export type TransportFactory = (handler: DeliveryHandler) => Promise<StartedTransport>;

export async function startLocalTransport(handler: DeliveryHandler): Promise<StartedTransport<LocalTransport>> {
  const transport = new LocalTransport({ nodeId: 'test-local', log: silentLogger() });
  await transport.start(handler);
  return { transport, close: () => transport.close() };
}

export function testPrefix(): string {
  return `troupe-test-${randomBytes(4).toString('hex')}`;
}

export async function startAmqpTransport(
  handler: DeliveryHandler,
  options: Partial<AmqpTransportOptions> = {},
): Promise<StartedTransport<AmqpTransport>> {
  const transport = new AmqpTransport({
    url: engines.amqp,
    management: { url: amqpManagementUrl, vhost: vhostOf(engines.amqp) },
    nodeId: `test-${randomBytes(3).toString('hex')}`,
    shardCount: 4,
    log: silentLogger(),
    prefix: testPrefix(),
    ...options,
  });
  await transport.start(handler);
  return {
    transport,
    close: async () => {
      await transport.close();
      await deleteBrokerTopology(transport);
    },
  };
}

/** Removes a transport's queues and exchanges through a connection of its own. */
export async function deleteBrokerTopology(transport: AmqpTransport): Promise<void> {
  const connection = await amqp.connect(engines.amqp);
  try {
    const channel = await connection.createChannel();
    await deleteTopology(channel, transport.topology);
  } finally {
    await connection.close();
  }
  // Present only where a test made queues look older (decision 0048); absent (404) otherwise, or no management API.
  await removePolicies({ url: amqpManagementUrl, vhost: vhostOf(engines.amqp) }, transport.deadLetterPolicies).catch(() => undefined);
}

/** Every transport implementation, for contract suites; the AMQP one is absent when TEST_SKIP_AMQP=1. */
export const transportFactories: ReadonlyArray<{ readonly kind: 'local' | 'amqp'; readonly start: TransportFactory }> = [
  { kind: 'local', start: startLocalTransport },
  ...(skipEngine.amqp ? [] : [{ kind: 'amqp' as const, start: (handler: DeliveryHandler) => startAmqpTransport(handler) }]),
];

/** Polls until `condition` holds; fails with `what` after `timeoutMs`. For states, not for fixed sleeps. */
export async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Fails at once, saying what to run, when RabbitMQ's management plugin does not answer (the broker runs without
 * `rabbitmq-plugins enable rabbitmq_management`; .ci/run enables it). Tests that close connections from the broker
 * side need it; skipping them would hide a reconnect bug behind a setup gap.
 */
export async function requireManagementApi(): Promise<void> {
  const base = new URL(amqpManagementUrl);
  const origin = `${base.protocol}//${base.host}`;
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}`;
  const answered = await fetch(`${origin}/api/overview`, { headers: { authorization }, signal: AbortSignal.timeout(2_000) })
    .then((res) => res.ok, () => false);
  if (!answered) {
    throw new Error(`RabbitMQ's management API does not answer at ${origin}: run rabbitmq-plugins enable rabbitmq_management (or TEST_SKIP_AMQP=1)`);
  }
}

/**
 * Closes the broker connection whose client-provided name is `name` through the management API, as an operator or
 * a network partition would. The API lists a connection only after its statistics interval, so this can take seconds.
 */
export async function cutOff(name: string): Promise<void> {
  const base = new URL(amqpManagementUrl);
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}`;
  const origin = `${base.protocol}//${base.host}`;
  let brokerName: string | undefined;
  await eventually(async () => {
    const res = await fetch(`${origin}/api/vhosts/${encodeURIComponent(vhostOf(engines.amqp))}/connections`, { headers: { authorization } });
    const rows = (await res.json()) as Array<{ name: string; user_provided_name?: string; client_properties?: { connection_name?: string } }>;
    brokerName = rows.find((row) => row.user_provided_name === name || row.client_properties?.connection_name === name)?.name;
    return brokerName !== undefined;
  }, `connection ${name} in the management API`, 20_000);
  const res = await fetch(`${origin}/api/connections/${encodeURIComponent(brokerName!)}`, { method: 'DELETE', headers: { authorization, 'x-reason': 'test: cut off' } });
  if (res.status !== 200 && res.status !== 204) throw new Error(`closing connection ${name} answered ${res.status}`);
}
