// Invariant (issue 16, item 7): one org cannot push every other org's listings out of sight. Listings page by an
// opaque cursor (newest first, every listing exactly once across pages), filter by publisher and by text in name or
// description (wildcards taken literally), and an org past its listing quota is refused with 409 and lists nothing
// more; other orgs still publish.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { provision, type Org } from './fixtures.js';

const QUOTA = 4;

for (const { set, skip } of engineSets) describe(`marketplace listings: paging, filters, quota (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let flooder: Org; let quiet: Org; let reader: Org;
  const published: Record<string, string[]> = {};

  before(async () => {
    t = await startTestNode({ engines: set, config: { marketplaceListingsPerOrg: QUOTA } });
    [flooder, quiet, reader] = [await provision(t), await provision(t), await provision(t)];
  });
  after(async () => t?.close());

  async function publish(org: Org, name: string, description = 'an agent') {
    const card = await t.inject('POST', '/api/agent-cards', { token: org.ownerToken, body: { name, description, prompt: 'p', capabilities: [], config: {} } });
    expect(card.status, card.text).to.equal(201);
    return t.inject('POST', '/api/marketplace/listings', { token: org.ownerToken, body: { agentCardId: card.json.agentCard.id } });
  }

  it('refuses an org past its listing quota with 409, while other orgs still publish', async () => {
    const quietListing = await publish(quiet, 'Quiet helper', 'Finds 100% of the_bugs');
    expect(quietListing.status, quietListing.text).to.equal(201);
    published[quiet.orgId] = [quietListing.json.listing.id];
    published[flooder.orgId] = [];
    for (let i = 0; i < QUOTA; i += 1) {
      const r = await publish(flooder, `Flood ${i}`);
      expect(r.status, r.text).to.equal(201);
      published[flooder.orgId]!.push(r.json.listing.id);
    }
    const over = await publish(flooder, 'Flood over');
    expect([over.status, over.json.code]).to.deep.equal([409, 'CONFLICT']);
    expect(over.json.details).to.deep.equal({ quota: QUOTA });
    const fromFlooder = await t.inject('GET', `/api/marketplace/listings?publisherOrgId=${flooder.orgId}&limit=100`, { token: reader.apiKey });
    expect(fromFlooder.json.listings).to.have.length(QUOTA);
    expect((await publish(quiet, 'Quiet second')).status).to.equal(201);
  });

  it('pages newest first by cursor: every listing once, then nextCursor null', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await t.inject('GET', `/api/marketplace/listings?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: reader.ownerToken });
      expect(res.status, res.text).to.equal(200);
      expect(res.json.listings.length).to.be.at.most(2);
      seen.push(...res.json.listings.map((l: { id: string }) => l.id));
      cursor = res.json.nextCursor;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(cursor).to.equal(null);
    expect(seen).to.have.length(QUOTA + 2);
    expect(new Set(seen).size, 'no listing twice').to.equal(seen.length);
    for (const id of [...published[flooder.orgId]!, ...published[quiet.orgId]!]) expect(seen).to.include(id);
    const bad = await t.inject('GET', '/api/marketplace/listings?cursor=bm90LWEtY3Vyc29y', { token: reader.ownerToken });
    expect([bad.status, bad.json.code]).to.deep.equal([400, 'HTTP_BAD_QUERY']);
  });

  it('filters by publisher and by text in name or description, taking % and _ literally', async () => {
    const byQuiet = await t.inject('GET', `/api/marketplace/listings?publisherOrgId=${quiet.orgId}`, { token: reader.ownerToken });
    expect(byQuiet.json.listings.map((l: { name: string }) => l.name).sort()).to.deep.equal(['Quiet helper', 'Quiet second']);
    const text = async (q: string) =>
      (await t.inject('GET', `/api/marketplace/listings?q=${encodeURIComponent(q)}`, { token: reader.ownerToken })).json.listings.map((l: { name: string }) => l.name);
    expect(await text('quiet HELP')).to.deep.equal(['Quiet helper']);
    expect(await text('100% of the_bugs'), 'matched in the description').to.deep.equal(['Quiet helper']);
    expect(await text('%'), 'a literal percent sign').to.deep.equal(['Quiet helper']);
    expect(await text('_'), 'a literal underscore').to.deep.equal(['Quiet helper']);
    expect(await text('flood')).to.have.length(QUOTA);
    for (const query of ['limit=0', 'limit=101', 'publisherOrgId=nope', 'q=', `q=${'x'.repeat(101)}`, 'other=1']) {
      const res = await t.inject('GET', `/api/marketplace/listings?${query}`, { token: reader.ownerToken });
      expect(res.status, query).to.equal(400);
    }
  });
});
