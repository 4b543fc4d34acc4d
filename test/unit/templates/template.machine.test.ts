// Invariant: every template status × message pair is a move its table allows or a NOT_FOUND that changes nothing,
// and every target the table lists is reached; a save names the revision it started from (a stale one is a
// conflict), a publish freezes a changed draft into the next version, and another org never reaches the template.
import { expect } from 'chai';
import { runCommand } from '../../support/harness.js';
import { walkTable } from '../../support/table-walk.js';
import { createTemplateBehavior, initialTemplateState, type TemplateState } from '../../../actors/kinds/template/index.js';

const behavior = createTemplateBehavior();
const ORG = '11111111-1111-4111-8111-111111111111';
const OTHER = '22222222-2222-4222-8222-222222222222';
const content = { name: 'Triage', description: 'first look', definitionYaml: 'schemaVersion: v2\nname: t\n' };
const save = (changes: Record<string, unknown> = {}) =>
  ({ type: 'template.saveDraft', orgId: ORG, slug: 'triage', content, by: 'user:u', ...changes });
const publish = (orgId = ORG) => ({ type: 'template.publish', orgId, by: 'user:u', changeReason: null });

function present(): TemplateState {
  const r = runCommand(behavior, initialTemplateState(), save());
  if (!r.ok) throw new Error(r.rejection.message);
  return r.state;
}

walkTable(behavior, {
  title: 'template machine: every status × message pair, from its table',
  statesIn: (status) => [status === 'absent' ? initialTemplateState() : present()],
  messagesOf: (type) => (type === 'template.saveDraft' ? [save({ content: { ...content, name: 'Renamed' } })] : [publish()]),
  refusedWith: () => 'NOT_FOUND',
});

describe('template machine', () => {
  it('refuses a save from a stale revision and keeps an unchanged draft as it is', () => {
    const edited = runCommand(behavior, present(), save({ content: { ...content, description: 'second look' }, expectedRevision: 1 }));
    if (!edited.ok) throw new Error(edited.rejection.message);
    const stale = runCommand(behavior, edited.state, save({ expectedRevision: 1 }));
    expect(!stale.ok && stale.rejection.code).to.equal('CONFLICT');
    const same = runCommand(behavior, edited.state, save({ content: { ...content, description: 'second look' } }));
    expect(same.ok && same.changed).to.equal(false);
  });

  it('publishes a changed draft as the next version, and refuses a publish with nothing new', () => {
    const first = runCommand(behavior, present(), publish());
    if (!first.ok) throw new Error(first.rejection.message);
    expect(first.reply).to.deep.include({ liveVersion: 1 });
    const again = runCommand(behavior, first.state, publish());
    expect(!again.ok && again.rejection.code).to.equal('CONFLICT');
  });

  it("is not found for another org's message, and a publish before any draft is not found", () => {
    const foreign = runCommand(behavior, present(), publish(OTHER));
    expect(!foreign.ok && foreign.rejection.code).to.equal('NOT_FOUND');
    const early = runCommand(behavior, initialTemplateState(), publish());
    expect(!early.ok && early.rejection.code).to.equal('NOT_FOUND');
  });
});
