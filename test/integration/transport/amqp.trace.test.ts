/**
 * Invariant: the W3C trace of the request that made an ask or a tell travels in its envelope, and the node that runs
 * the actor handles the message inside it, so its log lines name the same trace; a message made outside any request
 * carries none; and a malformed trace is refused by the envelope schema.
 */
import { expect } from 'chai';
import { Writable } from 'node:stream';
import type { AmqpTransport } from '../../../transport/amqp/transport.js';
import { createLogger } from '../../../ops/kernel/logger.js';
import { currentTrace, traceparentFor, withTrace } from '../../../ops/kernel/trace-context.js';
import { createEnvelope, decodeEnvelope, encodeEnvelope, MalformedEnvelopeError } from '../../../transport/envelope.js';
import { skipEngine } from '../../support/engines.js';
import { startAmqpTransport, testPrefix, type StartedTransport } from '../../support/transport.js';

(skipEngine.amqp ? describe.skip : describe)('AMQP transport: the request trace crosses to the node running the actor', function () {
  this.timeout(30_000);
  const started: StartedTransport<AmqpTransport>[] = [];
  after(async () => { await Promise.all(started.map((s) => s.close())); });

  it('carries traceparent on asks and tells, and none outside a request', async () => {
    const prefix = testPrefix();
    const seen: Array<string | undefined> = [];
    let told: () => void = () => undefined;
    const tellSeen = new Promise<void>((resolve) => { told = resolve; });
    const holder = await startAmqpTransport(async (_address, message) => {
      seen.push(currentTrace()?.traceparent);
      if ((message as { tell?: boolean }).tell) told();
      return 'ok';
    }, { prefix, nodeId: 'trace-holder', shardCount: 1, ownedShards: 'all' });
    started.push(holder);
    const asker = await startAmqpTransport(async () => 'never', { prefix, nodeId: 'trace-asker', shardCount: 1, ownedShards: [], shortcut: false, ownerRouting: false });
    started.push(asker);

    const traceparent = traceparentFor('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(traceparent).to.match(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
    await withTrace({ traceparent }, async () => {
      expect(await asker.transport.ask('org/a', { n: 1 }, { timeoutMs: 10_000 })).to.equal('ok');
      await asker.transport.tell('org/a', { tell: true });
    });
    await tellSeen;
    expect(await asker.transport.ask('org/a', { n: 2 }, { timeoutMs: 10_000 })).to.equal('ok');
    expect(seen).to.deep.equal([traceparent, traceparent, undefined]);
  });

  it('starts a trace for a request without one (or with a malformed one), and the envelope refuses a bad trace', () => {
    expect(traceparentFor(undefined)).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const fresh = traceparentFor('00-00000000000000000000000000000000-00f067aa0ba902b7-01');
    expect(fresh).not.to.contain('00000000000000000000000000000000');
    const forged = JSON.parse(encodeEnvelope(createEnvelope({ type: 'tell', to: 'org/a', from: 'n1', deadline: Date.now() + 1000, payload: {} })).toString());
    forged.trace = 'not-a-trace\r\ninjected: yes';
    expect(() => decodeEnvelope(Buffer.from(JSON.stringify(forged)))).to.throw(MalformedEnvelopeError);
  });

  it('puts the trace on every log line written inside it', () => {
    const lines: string[] = [];
    const sink = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } });
    const log = createLogger({ level: 'info', nodeId: 'n1' }, sink);
    const traceparent = traceparentFor(undefined);
    withTrace({ traceparent, reqId: 'r1' }, () => log.info({ reqId: 'r1' }, 'inside'));
    log.info('outside');
    expect(JSON.parse(lines[0]!)).to.include({ msg: 'inside', trace: traceparent, reqId: 'r1', node: 'n1' });
    expect(lines[0]!.match(/"reqId"/g), 'the request id once').to.have.length(1);
    expect(JSON.parse(lines[1]!)).not.to.have.property('trace');
  });
});
