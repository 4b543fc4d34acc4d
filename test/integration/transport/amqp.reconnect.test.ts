/**
 * Invariant: losing the broker connection is survivable and never leaves a caller hanging. Asks in flight fail at
 * once with TRANSPORT_UNAVAILABLE, asks while disconnected fail immediately, and after the transport reconnects by
 * itself the topology is declared again (even parts an operator deleted meanwhile) and asks, tells and event
 * subscriptions work again.
 */
import { expect } from 'chai';
import type { Socket } from 'node:net';
import amqp from 'amqplib';
import { TroupeError } from '../../../ops/kernel/errors.js';
import type { AmqpTransport } from '../../../transport/amqp/transport.js';
import { amqpManagementUrl, engines, skipEngine } from '../../support/engines.js';
import { eventually, startAmqpTransport, type StartedTransport } from '../../support/transport.js';

const MANAGEMENT = new URL(amqpManagementUrl).origin;
const managementAuth = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

async function managementAvailable(): Promise<boolean> {
  try {
    return (await fetch(`${MANAGEMENT}/api/overview`, { headers: { authorization: managementAuth } })).ok;
  } catch {
    return false;
  }
}

/** Server-side close through the management API (connection.close 320 CONNECTION_FORCED), as an operator would. */
async function closeFromBroker(transport: AmqpTransport): Promise<void> {
  let name: string | undefined;
  await eventually(
    async () => {
      const response = await fetch(`${MANAGEMENT}/api/connections?columns=name,client_properties`, { headers: { authorization: managementAuth } });
      const connections = (await response.json()) as { name: string; client_properties?: { connection_name?: string } }[];
      name = connections.find((c) => c.client_properties?.connection_name === transport.connectionName)?.name;
      return name !== undefined;
    },
    'the connection to appear in the management API',
    15_000,
  );
  const response = await fetch(`${MANAGEMENT}/api/connections/${encodeURIComponent(name!)}`, {
    method: 'DELETE',
    headers: { authorization: managementAuth, 'x-reason': 'transport reconnect test' },
  });
  expect(response.status).to.be.within(200, 299);
}

/** Client-side network failure (a reset socket): no AMQP close handshake. A socket that dies silently is caught by heartbeats instead. */
function destroySocket(transport: AmqpTransport): void {
  // Reaches into amqplib's connection for its socket; tests only.
  const internals = transport as unknown as { link: { session?: { model: { connection: { stream: Socket } } } } };
  internals.link.session!.model.connection.stream.destroy(new Error('simulated network failure'));
}

(skipEngine.amqp ? describe.skip : describe)('AMQP transport: reconnect', function () {
  this.timeout(40_000);
  let started: StartedTransport<AmqpTransport>;
  let releaseHung: () => void;
  let hangEntered: number;

  beforeEach(async () => {
    const hung = new Promise<void>((resolve) => (releaseHung = resolve));
    hangEntered = 0;
    started = await startAmqpTransport(async (address, message) => {
      if (address.startsWith('hang/')) {
        hangEntered += 1;
        await hung;
      }
      return { address, message };
    });
  });

  afterEach(async () => {
    releaseHung();
    await started.close();
  });

  it('fails in-flight and new asks at once when the socket dies, then reconnects and answers again', async () => {
    const { transport } = started;
    const before = transport.connectionCount;
    const inFlight = transport.ask('hang/1', {}, { timeoutMs: 20_000 }).catch((err: unknown) => err);
    await eventually(() => hangEntered === 1, 'the ask to reach its handler');
    const lostAt = Date.now();
    destroySocket(transport);
    const err = await inFlight;
    expect(err).to.be.instanceOf(TroupeError);
    expect((err as TroupeError).code).to.equal('TRANSPORT_UNAVAILABLE');
    expect(Date.now() - lostAt).to.be.below(2_000);

    // Reconnecting waits at least 80 ms (100 ms backoff, 20% jitter), so the transport is down right now.
    expect(transport.ready()).to.equal(false);
    const askedAt = Date.now();
    const whileDown = await transport.ask('echo/1', {}, { timeoutMs: 10_000 }).catch((caught: unknown) => caught);
    expect((whileDown as TroupeError).code).to.equal('TRANSPORT_UNAVAILABLE');
    expect(Date.now() - askedAt).to.be.below(100);
    releaseHung();
    await eventually(() => transport.ready() && transport.connectionCount === before + 1, 'the transport to reconnect');
    expect(await transport.ask('echo/2', 'again', { timeoutMs: 5_000 })).to.deep.equal({ address: 'echo/2', message: 'again' });
  });

  it('re-declares deleted topology and re-binds subscriptions after the broker closes the connection', async function () {
    const { transport } = started;
    const events: string[] = [];
    await transport.subscribe('org.*.session.updated', (topic) => events.push(topic));

    // An operator deletes the dead-letter queue and exchange while the node runs; nothing notices until a reconnect.
    const admin = await amqp.connect(engines.amqp);
    const adminChannel = await admin.createChannel();
    await adminChannel.deleteQueue(transport.names.deadLetterQueue);
    await adminChannel.deleteExchange(transport.names.deadLetterExchange);

    const before = transport.connectionCount;
    if (await managementAvailable()) await closeFromBroker(transport);
    else destroySocket(transport);
    await eventually(() => transport.ready() && transport.connectionCount === before + 1, 'the transport to reconnect', 20_000);

    try {
      await adminChannel.checkExchange(transport.names.deadLetterExchange);
      const dlq = await adminChannel.checkQueue(transport.names.deadLetterQueue);
      expect(dlq.queue).to.equal(transport.names.deadLetterQueue);
    } finally {
      await admin.close().catch(() => undefined);
    }

    expect(await transport.ask('echo/3', 'back', { timeoutMs: 5_000 })).to.deep.equal({ address: 'echo/3', message: 'back' });
    await transport.tell('echo/4', 'told');
    await transport.publish('org.o1.session.updated', {});
    await eventually(() => events.length === 1, 'the event after reconnect');
    expect(events).to.deep.equal(['org.o1.session.updated']);
  });
});
