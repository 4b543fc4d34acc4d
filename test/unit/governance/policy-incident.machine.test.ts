// Invariant: every lifecycle × message pair of the policy and incident machines is either a transition the table
// allows or an explicit rejection, and every target the tables list is reached; a policy version is appended exactly
// when the Cedar text changes; archive is final; another org never reaches a policy or incident it does not own.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { runCommand } from '../../support/harness.js';
import { walkTable } from '../../support/table-walk.js';
import { createPolicyBehavior, type PolicyState } from '../../../actors/kinds/policy/index.js';
import { createIncidentBehavior, type IncidentState } from '../../../actors/kinds/incident/index.js';

const orgId = randomUUID();
const policy = createPolicyBehavior();
const incident = createIncidentBehavior();
const create = { type: 'policy.create', orgId, versionId: randomUUID(), name: 'p', description: '', cedarPolicy: 'permit (principal, action, resource);', scope: 'workspace', scopeId: orgId, status: 'active', regulatoryTags: [], metadata: {}, createdBy: 'u1', changeReason: '' };
const update = (changes: Record<string, unknown>, by = orgId) => ({ type: 'policy.update', orgId: by, versionId: randomUUID(), changes, changedBy: 'u2', changeReason: 'why' });

function policyIn(status: string): PolicyState {
  if (status === 'absent') return policy.initial('id');
  const made = runCommand(policy, policy.initial('id'), create);
  if (!made.ok) throw new Error('create failed');
  if (status === 'active') return made.state;
  const moved = runCommand(policy, made.state, update({ status }));
  if (!moved.ok) throw new Error(`could not reach ${status}`);
  return moved.state;
}

walkTable(policy, {
  title: 'policy machine: every lifecycle × message pair, from its table',
  statesIn: (status) => [policyIn(status)],
  messagesOf: (type) => (type === 'policy.create'
    ? [create, { ...create, status: 'draft' }]
    : [update({ name: 'n' }), ...['draft', 'active', 'archived'].map((status) => update({ status }))]),
  refusedWith: (from) => (from === 'absent' ? 'NOT_FOUND' : from === 'archived' ? 'ILLEGAL_TRANSITION' : 'ALREADY_EXISTS'),
});

const record = (change: string, fields: Record<string, unknown> = {}, by = orgId) =>
  ({ type: 'incident.record', orgId: by, source: 'incident-io', externalId: 'e1', change, fields });

function incidentIn(status: string): IncidentState {
  const absent = incident.initial('i');
  if (status === 'absent') return absent;
  const r = runCommand(incident, absent, record(status === 'open' ? 'created' : 'resolved', { title: 'T' }));
  if (!r.ok) throw new Error(r.rejection.message);
  return r.state;
}

walkTable(incident, {
  title: 'incident machine: every lifecycle × message pair, from its table',
  statesIn: (status) => [incidentIn(status)],
  messagesOf: () => [record('created', { title: 'T' }), record('updated', { status: 'fixing' }), record('resolved')],
});

describe('policy and incident machines', () => {
  it('appends a version only when the Cedar text changes, and hides other orgs', () => {
    const active = policyIn('active');
    const renamed = runCommand(policy, active, update({ name: 'n2' }));
    expect(renamed.ok && renamed.reply.appendedVersion).to.equal(null);
    const same = runCommand(policy, active, update({ cedarPolicy: create.cedarPolicy }));
    expect(same.ok && same.reply.appendedVersion).to.equal(null);
    const changed = runCommand(policy, active, update({ cedarPolicy: 'forbid (principal, action, resource);' }));
    expect(changed.ok && changed.reply.appendedVersion).to.equal(2);
    const foreign = runCommand(policy, active, update({ name: 'x' }, randomUUID()));
    expect(!foreign.ok && foreign.rejection.code).to.equal('NOT_FOUND');
    expect(runCommand(policy, active, { ...create, extra: 1 }).ok, 'malformed message').to.equal(false);
  });

  it('resolves an incident once, re-opens it, and hides it from other orgs', () => {
    let state: IncidentState = incident.initial('i');
    const created = runCommand(incident, state, record('created', { title: 'T' }));
    expect(created.ok && created.reply).to.deep.include({ created: true, resolved: false });
    state = created.ok ? created.state : state;
    const resolved = runCommand(incident, state, record('resolved'));
    expect(resolved.ok && resolved.reply.resolved).to.equal(true);
    state = resolved.ok ? resolved.state : state;
    const again = runCommand(incident, state, record('resolved'));
    expect(again.ok && again.reply.resolved, 'resolving twice reports it once').to.equal(false);
    const reopened = runCommand(incident, state, record('updated', { status: 'fixing' }));
    expect(reopened.ok && reopened.state.incident?.resolvedAt).to.equal(null);
    expect(runCommand(incident, state, record('updated', {}, randomUUID())).ok).to.equal(false);
  });
});
