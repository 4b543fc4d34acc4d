/**
 * Invariant: every Transport implementation behaves the same to its callers. An ask reaches the handler and
 * returns its value; a handler's TroupeError comes back with the same code; an unanswered ask fails with
 * TRANSPORT_TIMEOUT at its deadline; tells to one address are handled in the order they were sent; events reach
 * exactly the subscriptions whose AMQP topic pattern matches until they unsubscribe; thousands of concurrent asks
 * are all answered; and a closed transport refuses work with TRANSPORT_UNAVAILABLE.
 * Runs against LocalTransport and against AmqpTransport on the real broker (unique name prefix per run).
 */
import { expect } from 'chai';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { DeliveryHandler, Transport } from '../../transport/port.js';
import { eventually, transportFactories, type StartedTransport, type TransportFactory } from '../support/transport.js';

async function rejection(promise: Promise<unknown>): Promise<TroupeError> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(TroupeError);
    return err as TroupeError;
  }
  throw new Error('expected a rejection');
}

/** A handler whose behaviour is chosen by the address kind, so one started transport serves every test. */
class ScriptedHandler {
  readonly told = new Map<string, unknown[]>();
  hangEntered = 0;
  private releaseHung: () => void = () => undefined;
  private hung = new Promise<void>((resolve) => (this.releaseHung = resolve));

  readonly deadlines = new Map<string, number | undefined>();

  readonly handle: DeliveryHandler = async (address, message, deadline) => {
    const kind = address.slice(0, address.indexOf('/'));
    switch (kind) {
      case 'deadline':
        this.deadlines.set(address, deadline);
        return undefined;
      case 'echo':
        return { address, message };
      case 'nothing':
        return undefined;
      case 'refuse':
        throw new TroupeError('ILLEGAL_TRANSITION', 'session is already completed', { status: 'completed' });
      case 'hang':
        this.hangEntered += 1;
        await this.hung;
        return 'too late';
      case 'record': {
        // A random pause lets later messages overtake earlier ones if the transport does not keep per-address order.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
        const list = this.told.get(address) ?? [];
        list.push(message);
        this.told.set(address, list);
        return undefined;
      }
      default:
        throw new TroupeError('NOT_FOUND', `no actor kind ${kind}`);
    }
  };

  release(): void {
    this.releaseHung();
  }
}

export function transportContract(kind: string, start: TransportFactory): void {
  describe(`Transport contract: ${kind}`, function () {
    this.timeout(30_000);
    let started: StartedTransport;
    let transport: Transport;
    let handler: ScriptedHandler;

    beforeEach(async () => {
      handler = new ScriptedHandler();
      started = await start(handler.handle);
      transport = started.transport;
    });

    afterEach(async () => {
      handler.release();
      await started.close();
    });

    it('is ready once started and reports its kind', () => {
      expect(transport.ready()).to.equal(true);
      expect(transport.kind).to.equal(kind);
    });

    it('answers an ask with the handler value, a copy that crossed the wire', async () => {
      const message = { text: 'héllo ✓', n: 3, nested: { list: [1, 2] } };
      const reply = await transport.ask<{ address: string; message: unknown }>('echo/a1', message, { timeoutMs: 5_000 });
      expect(reply).to.deep.equal({ address: 'echo/a1', message });
      expect(reply.message).not.to.equal(message);
    });

    it('resolves an ask whose handler returns nothing with undefined', async () => {
      expect(await transport.ask('nothing/1', null, { timeoutMs: 5_000 })).to.equal(undefined);
    });

    it('brings a handler TroupeError back with the same code, message and details', async () => {
      const err = await rejection(transport.ask('refuse/s1', {}, { timeoutMs: 5_000 }));
      expect(err.code).to.equal('ILLEGAL_TRANSITION');
      expect(err.status).to.equal(409);
      expect(err.message).to.equal('session is already completed');
      expect(err.details).to.deep.equal({ status: 'completed' });
    });

    it('fails an unanswered ask with TRANSPORT_TIMEOUT at its deadline', async () => {
      const startedAt = Date.now();
      const err = await rejection(transport.ask('hang/1', {}, { timeoutMs: 300 }));
      expect(err.code).to.equal('TRANSPORT_TIMEOUT');
      expect(Date.now() - startedAt).to.be.within(250, 3_000);
    });

    it('hands the handler the asker\'s deadline with an ask, and none with a tell', async () => {
      const asked = Date.now();
      await transport.ask('deadline/ask', {}, { timeoutMs: 7_000 });
      expect(handler.deadlines.get('deadline/ask')).to.be.within(asked + 7_000, Date.now() + 7_000);
      await transport.tell('deadline/tell', {});
      await eventually(() => handler.deadlines.has('deadline/tell'), 'tell handled');
      expect(handler.deadlines.get('deadline/tell')).to.equal(undefined);
    });

    it('refuses a malformed address as a validation error', async () => {
      const err = await rejection(transport.ask('no-slash', {}, { timeoutMs: 1_000 }));
      expect(err.code).to.equal('VALIDATION_FAILED');
    });

    it('delivers tells to one address in the order they were sent', async () => {
      const count = 150;
      const sends: Promise<void>[] = [];
      for (let i = 0; i < count; i += 1) {
        sends.push(transport.tell('record/x', { i }));
        sends.push(transport.tell('record/y', { i }));
      }
      await Promise.all(sends);
      await eventually(() => (handler.told.get('record/x')?.length ?? 0) === count && (handler.told.get('record/y')?.length ?? 0) === count, 'all tells handled');
      const expected = Array.from({ length: count }, (_, i) => ({ i }));
      expect(handler.told.get('record/x')).to.deep.equal(expected);
      expect(handler.told.get('record/y')).to.deep.equal(expected);
    });

    it('delivers events to matching patterns only (* one word, # zero or more) and stops after unsubscribe', async () => {
      const seen: Record<string, string[]> = { star: [], hash: [], exact: [], sentinel: [] };
      const unsubscribeStar = await transport.subscribe('org.*.session.updated', (topic) => seen.star!.push(topic));
      await transport.subscribe('org.o1.#', (topic) => seen.hash!.push(topic));
      await transport.subscribe('org.o1.session.updated', (topic) => seen.exact!.push(topic));
      await transport.subscribe('sentinel.#', (topic) => seen.sentinel!.push(topic));

      await transport.publish('org.o1.session.updated', { id: 1 });
      await transport.publish('org.o2.session.updated', { id: 2 });
      await transport.publish('org.o1', { id: 3 });
      await transport.publish('org.o1.session.updated.extra', { id: 4 });
      await transport.publish('other.o1.session.updated', { id: 5 });
      await transport.publish('sentinel.one', {});
      await eventually(() => seen.sentinel!.length === 1, 'the first sentinel event');

      expect(seen.star).to.deep.equal(['org.o1.session.updated', 'org.o2.session.updated']);
      expect(seen.hash).to.deep.equal(['org.o1.session.updated', 'org.o1', 'org.o1.session.updated.extra']);
      expect(seen.exact).to.deep.equal(['org.o1.session.updated']);

      await unsubscribeStar();
      await transport.publish('org.o2.session.updated', { id: 6 });
      await transport.publish('sentinel.two', {});
      await eventually(() => seen.sentinel!.length === 2, 'the second sentinel event');
      expect(seen.star).to.have.length(2);
    });

    it('hands each subscriber the event payload', async () => {
      const payloads: unknown[] = [];
      await transport.subscribe('org.*.credentials.rotated', (_topic, event) => payloads.push(event));
      await transport.publish('org.o9.credentials.rotated', { kind: 'github', version: 4 });
      await eventually(() => payloads.length === 1, 'the event');
      expect(payloads).to.deep.equal([{ kind: 'github', version: 4 }]);
    });

    it('refuses to publish on a topic with wildcards', async () => {
      const err = await rejection(transport.publish('org.*.x', {}));
      expect(err.code).to.equal('VALIDATION_FAILED');
    });

    it('answers 2,000 concurrent asks, each with its own reply', async () => {
      const count = 2_000;
      const replies = await Promise.all(
        Array.from({ length: count }, (_, i) => transport.ask<{ message: { i: number } }>(`echo/${i % 97}`, { i }, { timeoutMs: 20_000 })),
      );
      expect(replies.map((r) => r.message.i)).to.deep.equal(Array.from({ length: count }, (_, i) => i));
    });

    it('refuses asks, tells and publishes with TRANSPORT_UNAVAILABLE once closed', async () => {
      await started.close();
      expect(transport.ready()).to.equal(false);
      expect((await rejection(transport.ask('echo/1', {}, { timeoutMs: 1_000 }))).code).to.equal('TRANSPORT_UNAVAILABLE');
      expect((await rejection(transport.tell('echo/1', {}))).code).to.equal('TRANSPORT_UNAVAILABLE');
      expect((await rejection(transport.publish('org.o1.x', {}))).code).to.equal('TRANSPORT_UNAVAILABLE');
    });

    it('lets an in-flight handler finish and answer when closing', async () => {
      const reply = transport.ask('hang/2', {}, { timeoutMs: 10_000 });
      await eventually(() => handler.hangEntered === 1, 'the handler to start');
      let closed = false;
      const closing = started.close().then(() => (closed = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(closed, 'close waits for the running handler').to.equal(false);
      handler.release();
      expect(await reply).to.equal('too late');
      await closing;
    });
  });
}

for (const { kind, start } of transportFactories) transportContract(kind, start);
