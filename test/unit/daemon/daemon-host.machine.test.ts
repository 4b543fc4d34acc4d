// Invariant: every daemon-host status × message pair is either allowed by the table or rejected without changing
// the state; a mutation is delivered at most once and cannot be cancelled after delivery (or delivered after a
// cancel), whichever of the two the mailbox takes first.
import { expect } from 'chai';
import { runCommand } from '../../support/harness.js';
import { walkTable } from '../../support/table-walk.js';
import {
  createDaemonHostBehavior, initialDaemonHostState,
  MAX_PENDING_MUTATIONS, type DaemonHostMsg, type DaemonHostState,
} from '../../../actors/kinds/daemon-host/index.js';

const behavior = createDaemonHostBehavior();
const ORG = '11111111-1111-4111-8111-111111111111';
const REG = '33333333-3333-4333-8333-333333333333';
const M1 = '44444444-4444-4444-8444-444444444444';
const register: DaemonHostMsg = { type: 'daemonHost.register', orgId: ORG, registrationId: REG, hostname: 'h', maxAgents: 2, projectIds: [] };
const enqueue = (id = M1): DaemonHostMsg => ({ type: 'daemonHost.enqueue', mutationId: id, op: 'pool.deleted', params: { poolId: 'p' }, requestedBy: 'user:u' });

function registered(): DaemonHostState {
  const r = runCommand(behavior, initialDaemonHostState(), register, { id: 'w1' });
  if (!r.ok) throw new Error('register refused');
  return r.state;
}
const messages: Record<DaemonHostMsg['type'], DaemonHostMsg> = {
  'daemonHost.register': register,
  'daemonHost.enqueue': enqueue(),
  'daemonHost.deliver': { type: 'daemonHost.deliver' },
  'daemonHost.cancel': { type: 'daemonHost.cancel', mutationId: M1 },
};

walkTable(behavior, {
  title: 'daemon-host machine: every status × message pair, from its table',
  statesIn: (status) => [status === 'absent' ? initialDaemonHostState() : runCommand(behavior, registered(), enqueue(), { id: 'w1' }).state],
  messagesOf: (type) => [messages[type as DaemonHostMsg['type']]],
  ctx: { id: 'w1' },
  refusedWith: () => 'NOT_FOUND',
});

describe('daemon-host machine', () => {
  it('deliver then cancel: delivered once, cancel is 409; cancel then deliver: nothing delivered', () => {
    const queued = runCommand(behavior, registered(), enqueue(), { id: 'w1' });
    if (!queued.ok) throw new Error('enqueue refused');
    const delivered = runCommand(behavior, queued.state, { type: 'daemonHost.deliver' }, { id: 'w1' });
    if (!delivered.ok) throw new Error('deliver refused');
    expect((delivered.reply as unknown as { mutations: unknown[] }).mutations).to.have.length(1);
    const lateCancel = runCommand(behavior, delivered.state, { type: 'daemonHost.cancel', mutationId: M1 }, { id: 'w1' });
    expect(!lateCancel.ok && lateCancel.rejection.code).to.equal('CONFLICT');
    const again = runCommand(behavior, delivered.state, { type: 'daemonHost.deliver' }, { id: 'w1' });
    expect(again.ok && (again.reply as unknown as { mutations: unknown[] }).mutations).to.deep.equal([]);

    const cancelled = runCommand(behavior, queued.state, { type: 'daemonHost.cancel', mutationId: M1 }, { id: 'w1' });
    if (!cancelled.ok) throw new Error('cancel refused');
    const lateDeliver = runCommand(behavior, cancelled.state, { type: 'daemonHost.deliver' }, { id: 'w1' });
    expect(lateDeliver.ok && (lateDeliver.reply as unknown as { mutations: unknown[] }).mutations).to.deep.equal([]);
  });

  it('bounds the undelivered queue', () => {
    let state = registered();
    for (let i = 0; i < MAX_PENDING_MUTATIONS; i += 1) {
      const r = runCommand(behavior, state, enqueue(`44444444-4444-4444-8444-${String(i).padStart(12, '0')}`), { id: 'w1' });
      if (!r.ok) throw new Error('enqueue refused early');
      state = r.state;
    }
    const over = runCommand(behavior, state, enqueue('55555555-5555-4555-8555-555555555555'), { id: 'w1' });
    expect(!over.ok && over.rejection.code).to.equal('CONFLICT');
  });

  it('refuses params that do not fit their op', () => {
    const r = runCommand(behavior, registered(), { ...enqueue(), op: 'project.add', params: { poolId: 'p' } }, { id: 'w1' });
    expect(!r.ok && r.rejection.code).to.equal('VALIDATION_FAILED');
  });
});
