// Invariant: agent cards are versioned per org and invisible to other orgs; a marketplace listing follows its
// card's newest version; an install into another org is pinned with its overlay, previews a newer source version
// with payload, prompt, capability and overlay deltas, and accepting it re-pins, re-materializes and drops (and
// audits) exactly the overlay keys whose targets vanished — all through the node's HTTP edge (injected, no socket).
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { addUser, hostileBodies, provision, type Org } from './fixtures.js';

for (const { set, skip } of engineSets) describe(`agent cards and the marketplace over HTTP (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let publisher: Org;
  let installer: Org;

  before(async () => {
    t = await startTestNode({ engines: set });
    publisher = await provision(t);
    installer = await provision(t);
  });
  after(async () => t?.close());

  const card = {
    name: 'Triage bot', description: 'Sorts incoming issues', prompt: 'You triage.\nBe brief.',
    capabilities: ['tracker.comment', 'repo.read'], config: { temperature: 0.2, style: { tone: 'dry' } },
  };

  async function createCard(org: Org, body: unknown = card) {
    const r = await t.inject('POST', '/api/agent-cards', { token: org.ownerToken, body });
    expect(r.status, r.text).to.equal(201);
    return r.json.agentCard;
  }

  it('creates a card and appends a version only when the payload changes', async () => {
    const created = await createCard(publisher);
    expect(created.version).to.equal(1);
    expect(created.payload.capabilities).to.deep.equal(['repo.read', 'tracker.comment']);
    const same = await t.inject('PATCH', `/api/agent-cards/${created.id}`, { token: publisher.ownerToken, body: { name: 'Triage bot' } });
    expect(same.status, same.text).to.equal(200);
    expect(same.json.agentCard.version).to.equal(1);
    const changed = await t.inject('PATCH', `/api/agent-cards/${created.id}`, { token: publisher.ownerToken, body: { prompt: 'You triage carefully.' } });
    expect(changed.json.agentCard.version).to.equal(2);
    expect(changed.json.agentCard.payload.prompt).to.equal('You triage carefully.');
  });

  it('hides a card from another org (404) and refuses callers without credentials or rights', async () => {
    const created = await createCard(publisher);
    expect((await t.inject('GET', `/api/agent-cards/${created.id}`, { token: installer.ownerToken })).status).to.equal(404);
    expect((await t.inject('PATCH', `/api/agent-cards/${created.id}`, { token: installer.ownerToken, body: { name: 'x' } })).status).to.equal(404);
    expect((await t.inject('POST', '/api/marketplace/listings', { token: installer.ownerToken, body: { agentCardId: created.id } })).status).to.equal(404);
    expect((await t.inject('GET', `/api/agent-cards/${created.id}`)).status).to.equal(401);
    expect((await t.inject('GET', `/api/agent-cards/${created.id}`, { token: t.adminToken })).status).to.equal(403);
    const viewer = await addUser(t, publisher.orgId, 'viewer');
    expect((await t.inject('POST', '/api/agent-cards', { token: viewer.token, body: card })).status).to.equal(403);
    expect((await t.inject('PATCH', `/api/agent-cards/${created.id}`, { token: viewer.token, body: { name: 'x' } })).status).to.equal(403);
    expect((await t.inject('GET', `/api/agent-cards/${created.id}`, { token: viewer.token })).status).to.equal(200);
    const member = await addUser(t, publisher.orgId, 'member');
    expect((await t.inject('POST', '/api/marketplace/listings', { token: member.token, body: { agentCardId: created.id } })).status).to.equal(403);
  });

  it('installs a listing into another org, previews the next version and accepts it transactionally', async () => {
    const source = await createCard(publisher);
    const published = await t.inject('POST', '/api/marketplace/listings', { token: publisher.ownerToken, body: { agentCardId: source.id } });
    expect(published.status, published.text).to.equal(201);
    const listingId = published.json.listing.id;
    const again = await t.inject('POST', '/api/marketplace/listings', { token: publisher.ownerToken, body: { agentCardId: source.id } });
    expect(again.json.listing.id, 'publishing twice keeps one listing').to.equal(listingId);
    const listed = await t.inject('GET', '/api/marketplace/listings', { token: installer.apiKey });
    expect(listed.json.listings.map((l: { id: string }) => l.id)).to.include(listingId);

    const overlay = { 'config.temperature': 0.9, 'config.style.tone': 'warm', description: 'Our triage' };
    const bad = await t.inject('POST', '/api/agent-cards/marketplace-install', { token: installer.ownerToken, body: { listingId, overlay: { 'config.nope': 1 } } });
    expect(bad.status).to.equal(400);
    const invalid = await t.inject('POST', '/api/agent-cards/marketplace-install', { token: installer.ownerToken, body: { listingId, overlay: { description: 42 } } });
    expect(invalid.status).to.equal(400);
    const installed = await t.inject('POST', '/api/agent-cards/marketplace-install', { token: installer.ownerToken, body: { listingId, overlay } });
    expect(installed.status, installed.text).to.equal(201);
    const mine = installed.json.agentCard;
    expect(mine.orgId).to.equal(installer.orgId);
    expect(mine.install).to.deep.equal({ listingId, pinnedVersion: 1, overlay });
    expect(mine.payload.config).to.deep.equal({ temperature: 0.9, style: { tone: 'warm' } });
    expect(mine.payload.description).to.equal('Our triage');
    expect((await t.inject('GET', `/api/agent-cards/${mine.id}`, { token: publisher.ownerToken })).status, 'the install belongs to the installer').to.equal(404);

    const none = await t.inject('GET', `/api/agent-cards/${mine.id}/marketplace-install/update`, { token: installer.ownerToken });
    expect(none.json.update.available).to.equal(false);
    expect((await t.inject('POST', `/api/agent-cards/${mine.id}/marketplace-install/update`, { token: installer.ownerToken })).status).to.equal(409);

    // The publisher ships v2: the style block is gone, temperature changes upstream, a capability is swapped.
    const v2 = await t.inject('PATCH', `/api/agent-cards/${source.id}`, {
      token: publisher.ownerToken,
      body: { prompt: 'You triage.\nBe thorough.', capabilities: ['repo.read', 'ci.read'], config: { temperature: 0.5, maxTurns: 4 } },
    });
    expect(v2.json.agentCard.version).to.equal(2);

    const preview = await t.inject('GET', `/api/agent-cards/${mine.id}/marketplace-install/update`, { token: installer.ownerToken });
    expect(preview.status, preview.text).to.equal(200);
    const u = preview.json.update;
    expect(u.available).to.equal(true);
    expect(u.from.version).to.equal(1);
    expect(u.to.version).to.equal(2);
    expect(Object.keys(u.from).sort(), 'no publisher user ids (issue 16)').to.deep.equal(['createdAt', 'version']);
    expect(preview.text).to.not.include(publisher.ownerId);
    expect(u.promptDelta).to.deep.equal({ changed: true, removedLines: ['Be brief.'], addedLines: ['Be thorough.'] });
    expect(u.capabilityChanges).to.deep.equal({ added: ['ci.read'], removed: ['tracker.comment'] });
    expect(u.payloadDelta.added).to.deep.equal([{ path: 'config.maxTurns', value: 4 }]);
    expect(u.payloadDelta.removed).to.deep.equal([{ path: 'config.style.tone', value: 'dry' }]);
    expect(u.payloadDelta.changed).to.deep.equal([{ path: 'config.temperature', from: 0.2, to: 0.5 }]);
    expect(u.overlay.preserved).to.deep.equal(['description']);
    expect(u.overlay.conflicting).to.deep.equal([{ key: 'config.temperature', local: 0.9, upstreamFrom: 0.2, upstreamTo: 0.5 }]);
    expect(u.overlay.dropped).to.deep.equal(['config.style.tone']);
    expect((await t.inject('GET', `/api/agent-cards/${mine.id}/marketplace-install/update`, { token: publisher.ownerToken })).status).to.equal(404);

    const accepted = await t.inject('POST', `/api/agent-cards/${mine.id}/marketplace-install/update`, { token: installer.ownerToken });
    expect(accepted.status, accepted.text).to.equal(200);
    expect(accepted.json.droppedOverlayKeys).to.deep.equal(['config.style.tone']);
    const after = accepted.json.agentCard;
    expect(after.install).to.deep.equal({ listingId, pinnedVersion: 2, overlay: { 'config.temperature': 0.9, description: 'Our triage' } });
    expect(after.payload).to.deep.include({ prompt: 'You triage.\nBe thorough.', description: 'Our triage', capabilities: ['ci.read', 'repo.read'] });
    expect(after.payload.config).to.deep.equal({ temperature: 0.9, maxTurns: 4 });
    const reread = await t.inject('GET', `/api/agent-cards/${mine.id}`, { token: installer.ownerToken });
    expect(reread.json.agentCard).to.deep.equal(after);

    const audit = await t.inject('GET', '/api/audit?limit=50', { token: installer.ownerToken });
    const drops = audit.json.entries.filter((e: { type: string }) => e.type === 'agent_card.overlay_field_dropped');
    expect(drops).to.have.length(1);
    expect(drops[0].subject).to.equal(mine.id);
    expect(drops[0].payload).to.deep.include({ key: 'config.style.tone', fromVersion: 1, toVersion: 2 });
    expect((await t.inject('GET', '/api/audit/verify', { token: installer.ownerToken })).json.valid).to.equal(true);
    expect((await t.inject('POST', `/api/agent-cards/${mine.id}/marketplace-install/update`, { token: installer.ownerToken })).status, 'nothing newer').to.equal(409);
    // An installed card changes only through updates.
    expect((await t.inject('PATCH', `/api/agent-cards/${mine.id}`, { token: installer.ownerToken, body: { name: 'mine' } })).status).to.equal(409);
  });

  it('answers unknown ids and foreign listings with 404 and never a 5xx for hostile bodies', async () => {
    expect((await t.inject('GET', '/api/agent-cards/not-a-uuid', { token: publisher.ownerToken })).status).to.equal(404);
    expect((await t.inject('POST', '/api/agent-cards/marketplace-install', {
      token: publisher.ownerToken, body: { listingId: '00000000-0000-4000-8000-000000000000' },
    })).status).to.equal(404);
    for (const path of ['/api/agent-cards', '/api/marketplace/listings', '/api/agent-cards/marketplace-install']) {
      for (const rawBody of hostileBodies) {
        const r = await t.inject('POST', path, { token: publisher.ownerToken, rawBody, headers: { 'content-type': 'application/json' } });
        expect(r.status, `${path} ${r.text}`).to.be.within(400, 499);
      }
    }
    const deep = await t.inject('POST', '/api/agent-cards', { token: publisher.ownerToken, body: { ...card, config: JSON.parse(`${'{"a":'.repeat(500)}1${'}'.repeat(500)}`) } });
    expect(deep.status).to.be.below(500);
  });
});
