// Invariant: a lazy child logger writes exactly the lines a pino child would (same bindings, same level, nested
// lazies keep every binding), and makes no child while nothing is logged at an enabled level.
import { expect } from 'chai';
import sinon from 'sinon';
import { Writable } from 'node:stream';
import { createLogger, lazyChild } from '../../../ops/kernel/logger.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger({ level, nodeId: 'n1' }, sink), lines };
}

const flushed = () => new Promise((resolve) => setImmediate(resolve));

describe('lazyChild logger', () => {
  it('writes the lines a child would, with the bindings of every lazy level', async () => {
    const { log, lines } = capture('info');
    const actor = lazyChild(log, { actorKind: 'session', actorId: 's1' });
    const turn = lazyChild(actor, { msgType: 'session.transition' });
    turn.warn({ from: 'running' }, 'stale');
    actor.info('started');
    await flushed();
    expect(lines).to.have.length(2);
    expect(lines[0]).to.include({ node: 'n1', actorKind: 'session', actorId: 's1', msgType: 'session.transition', from: 'running', msg: 'stale' });
    expect(lines[1]).to.include({ actorKind: 'session', actorId: 's1', msg: 'started' });
    expect(lines[1]).to.not.have.property('msgType');
  });

  it('makes no child for a disabled level, nor when asked its level', async () => {
    const { log, lines } = capture('info');
    const child = sinon.spy(log, 'child');
    const turn = lazyChild(lazyChild(log, { actorId: 's1' }), { msgType: 'm' });
    turn.debug({ from: 'a', to: 'b' }, 'state changed');
    expect(turn.isLevelEnabled('debug')).to.equal(false);
    expect(turn.isLevelEnabled('warn')).to.equal(true);
    expect(turn.level).to.equal('info');
    await flushed();
    expect(child.called).to.equal(false);
    expect(lines).to.have.length(0);
    turn.error('failed');
    // Both levels are made now (a pino child inherits its parent's spied `child`): the actor's, then the turn's.
    expect(child.callCount).to.equal(2);
    await flushed();
    expect(lines[0]).to.include({ actorId: 's1', msgType: 'm', msg: 'failed' });
  });

  it('logs at debug when the parent does', async () => {
    const { log, lines } = capture('debug');
    lazyChild(log, { actorId: 's2' }).debug('state changed');
    await flushed();
    expect(lines[0]).to.include({ actorId: 's2', msg: 'state changed', level: 20 });
  });
});
