/**
 * Invariant: the org actor decides every credential status × message pair from its transition table: issue
 * creates, an identical replay changes nothing, revoke is final and idempotent, anything else is an explicit
 * rejection; every message, state and reply survives the wire (JSON round trip, schema).
 */
import { expect } from 'chai';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { runCommand, harnessNow } from '../../support/harness.js';
import { walkTable } from '../../support/table-walk.js';
import {
  createOrgBehavior, initialOrgState, MAX_CREDENTIALS_PER_KIND,
  type OrgMsg, type OrgState, type CredentialStatus,
} from '../../../actors/kinds/org/index.js';
import { mintSecret, apiKeyPrefix, registrationTokenPrefix } from '../../../actors/services/identity/secrets-format.js';
import { orgReplySchema, orgStateSchema } from '../../../schemas/identity/org-actor.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const ajv = addFormats(new Ajv());
const validState = ajv.compile(orgStateSchema);
const validReply = ajv.compile(orgReplySchema);

const ORG = '11111111-1111-4111-8111-111111111111';
const KEY = '22222222-2222-4222-8222-222222222222';
const TOKEN = '33333333-3333-4333-8333-333333333333';
const USER = '44444444-4444-4444-8444-444444444444';
const behavior = createOrgBehavior();

const keySecret = mintSecret(apiKeyPrefix);
const tokenSecret = mintSecret(registrationTokenPrefix);

const messages: Record<OrgMsg['type'], OrgMsg> = {
  'org.issueApiKey': {
    type: 'org.issueApiKey', keyId: KEY, name: 'ci', prefix: keySecret.lookupPrefix, hash: keySecret.hash,
    scopes: ['write'], requesterId: null, createdBy: USER,
  },
  'org.revokeApiKey': { type: 'org.revokeApiKey', keyId: KEY },
  'org.issueRegistrationToken': {
    type: 'org.issueRegistrationToken', tokenId: TOKEN, name: 'fleet', prefix: tokenSecret.lookupPrefix, hash: tokenSecret.hash, projects: [],
  },
  'org.revokeRegistrationToken': { type: 'org.revokeRegistrationToken', tokenId: TOKEN },
};

/** A state in which both the key and the token named by `messages` are in `status`. */
function stateWith(status: CredentialStatus): OrgState {
  let state = initialOrgState(ORG);
  if (status === 'absent') return state;
  for (const type of ['org.issueApiKey', 'org.issueRegistrationToken'] as const) {
    const r = runCommand(behavior, state, messages[type], { now: harnessNow - 1000 });
    if (!r.ok) throw new Error('setup failed');
    state = r.state;
  }
  if (status === 'revoked') {
    for (const type of ['org.revokeApiKey', 'org.revokeRegistrationToken'] as const) {
      const r = runCommand(behavior, state, messages[type], { now: harnessNow - 500 });
      if (!r.ok) throw new Error('setup failed');
      state = r.state;
    }
  }
  return state;
}

walkTable(behavior, {
  title: 'org actor machine: every credential status × message pair, from its table',
  statesIn: (status) => {
    const state = stateWith(status as CredentialStatus);
    expect(validState(state), JSON.stringify(validState.errors)).to.equal(true);
    return [state];
  },
  messagesOf: (type) => [messages[type as OrgMsg['type']]],
  refusedWith: () => 'NOT_FOUND',
  accepted(result, from, message) {
    expect(validState(result.state), JSON.stringify(validState.errors)).to.equal(true);
    expect(validReply(result.reply), JSON.stringify(validReply.errors)).to.equal(true);
    // Only a real change writes: replays of an issue and repeat revocations leave the state untouched.
    const real = from === 'absent' || (from === 'active' && message.type.startsWith('org.revoke'));
    expect(result.changed).to.equal(real);
    expect(result.effects).to.have.length(real ? 1 : 0);
  },
});

describe('org actor machine', () => {
  it('issuing records the key at decide time without the secret', () => {
    const r = runCommand(behavior, initialOrgState(ORG), messages['org.issueApiKey']);
    expect(r.ok).to.equal(true);
    if (!r.ok) return;
    expect(r.reply).to.deep.equal({ id: KEY, name: 'ci', prefix: keySecret.lookupPrefix, scopes: ['write'], requesterId: null, createdAt: harnessNow });
    expect(JSON.stringify(r.state)).to.not.contain(keySecret.full);
    expect(r.effects[0]).to.deep.include({ type: 'apiKeyIssued' });
  });

  it('a revocation keeps its first time when repeated', () => {
    const revoked = stateWith('revoked');
    const r = runCommand(behavior, revoked, messages['org.revokeApiKey'], { now: harnessNow + 99_000 });
    expect(r.ok && r.reply).to.deep.equal({ id: KEY, revokedAt: harnessNow - 500, alreadyRevoked: true });
  });

  it('an issue under an existing id with another secret is refused', () => {
    const other = mintSecret(apiKeyPrefix);
    const r = runCommand(behavior, stateWith('active'), { ...messages['org.issueApiKey'], hash: other.hash, prefix: other.lookupPrefix });
    expect(r.ok).to.equal(false);
    if (!r.ok) expect(r.rejection.code).to.equal('ALREADY_EXISTS');
  });

  it('refuses to grow past the per-org cap', () => {
    const apiKeys: Record<string, OrgState['apiKeys'][string]> = {};
    for (let i = 0; i < MAX_CREDENTIALS_PER_KIND; i++) {
      const id = `00000000-0000-4000-8000-${i.toString().padStart(12, '0')}`;
      apiKeys[id] = { id, name: 'k', prefix: 'AAAAAAAA', hash: 'a'.repeat(64), scopes: [], requesterId: null, createdBy: null, createdAt: 1, revokedAt: null };
    }
    const r = runCommand(behavior, { ...initialOrgState(ORG), apiKeys }, messages['org.issueApiKey']);
    expect(r.ok).to.equal(false);
    if (!r.ok) expect(r.rejection.code).to.equal('CONFLICT');
  });

  it('rejects malformed messages before decide', () => {
    for (const bad of [
      { type: 'org.issueApiKey' },
      { ...messages['org.issueApiKey'], hash: 'not-hex' },
      { ...messages['org.issueApiKey'], scopes: ['Admin!'] },
      { ...messages['org.revokeApiKey'], keyId: "1' or 1=1" },
      { type: 'org.explode' },
    ]) {
      const r = runCommand(behavior, initialOrgState(ORG), bad);
      expect(r.ok, JSON.stringify(bad)).to.equal(false);
      if (!r.ok) expect(r.rejection.code).to.equal('VALIDATION_FAILED');
    }
  });
});
