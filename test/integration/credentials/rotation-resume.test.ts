// Invariant: a rotate-stream subscriber that resumes gets the rotations it missed, then live ones, and a live
// rotation that arrives while the missed ones are read is sent only when it is newer than the replayed rotation of
// its kind: the same rotation goes once, and an older one published late never leaves the subscriber on a stale value.
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createCredentialServices, type OpenedRotation } from '../../../actors/services/credentials/rotation.js';
import { rotationSealContext, streamTopics, type SealedRotation } from '../../../actors/services/fleet/node-streams.js';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { provisionOrg, type Org } from '../sessions/support.js';

/**
 * The node's database, except that the read of `org_credentials` made while `hold` is set waits until it is
 * released: the moment between "live rotations are held" and "the missed ones are read", made as long as a test needs.
 */
function holdingCredentialReads(db: Knex) {
  let hold: { entered: () => void; released: Promise<void> } | undefined;
  const gated = new Proxy(db, {
    apply(target, thisArg, args: unknown[]) {
      const builder = Reflect.apply(target, thisArg, args) as Knex.QueryBuilder;
      const held = hold;
      if (args[0] !== 'org_credentials' || held === undefined) return builder;
      hold = undefined;
      const run = builder.then.bind(builder);
      (builder as { then: unknown }).then = (onResolved: never, onRejected: never) => {
        held.entered();
        return held.released.then(() => run(onResolved, onRejected));
      };
      return builder;
    },
  });
  return {
    db: gated,
    /** Holds the next credential read; resolves `entered` when it is made, and the read runs on `release()`. */
    holdNext() {
      let entered!: () => void;
      let release!: () => void;
      const enteredP = new Promise<void>((r) => { entered = r; });
      hold = { entered, released: new Promise<void>((r) => { release = r; }) };
      return { entered: enteredP, release };
    },
  };
}

for (const { set, skip } of engineSets) describe(`rotate stream resumption, live rotations held during the replay (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: Org;
  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t, 'Acme');
  });
  after(() => t?.close());

  it('sends a held live rotation only when it is newer than the replayed one of its kind', async () => {
    const deps = t.node.deps;
    expect((await t.inject('PUT', `/api/org/${org.orgId}/credentials/llm-key`, { token: org.ownerToken, body: { provider: 'static', value: 'recorded' } })).status).to.equal(200);
    const recorded = await deps.services.credentials.rotate(org.orgId, 'llm-key');

    const reads = holdingCredentialReads(deps.db);
    const services = createCredentialServices({ ...deps, db: reads.db }, deps.services.streams);
    const heard: OpenedRotation[] = [];
    const held = reads.holdNext();
    const subscribed = services.subscribe(org.orgId, (r) => heard.push(r), 'start');
    await held.entered;

    // While the replay's read waits: the recorded rotation published again, an older one, and a newer one whose
    // record the read will not see.
    const sealed = (rotatedAt: string, value: string): SealedRotation => ({
      orgId: org.orgId, kind: 'llm-key', rotatedAt, sealedValue: deps.secrets.seal(value, rotationSealContext(org.orgId, 'llm-key', rotatedAt)),
    });
    const at = Date.parse(recorded.rotatedAt);
    const older = new Date(at - 60_000).toISOString();
    const newer = new Date(at + 60_000).toISOString();
    const observed: string[] = [];
    const { unsubscribe } = deps.services.streams.credentials.subscribe(org.orgId, ({ data }) => observed.push(data.rotatedAt));
    for (const event of [sealed(recorded.rotatedAt, 'recorded'), sealed(older, 'older, published late'), sealed(newer, 'newer')]) {
      await deps.transport.publish(streamTopics.credentialRotated(org.orgId), event);
    }
    await eventually(async () => observed.length === 3, 'the three live rotations reached the node');
    unsubscribe();
    expect(heard, 'nothing is sent before the replay').to.have.length(0);

    held.release();
    const leave = await subscribed;
    try {
      expect(heard.map((r) => [r.rotatedAt, r.value])).to.deep.equal([[recorded.rotatedAt, 'recorded'], [newer, 'newer']]);
    } finally {
      leave();
    }
  });
});
