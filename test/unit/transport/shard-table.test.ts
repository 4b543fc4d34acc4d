/**
 * Invariant: each shard's life follows the state table, and nothing else: every (phase, event) pair either moves the
 * shard to the one phase the table allows or is refused and changes nothing. What the transport reads off a shard
 * (its consumer, whether it is consumed, held, parks deliveries) follows from its phase alone.
 */
import { expect } from 'chai';
import { SHARD_EVENTS, SHARD_PHASES, ShardTable, nextPhase, type ShardEvent, type ShardPhase } from '../../../transport/amqp/shard-table.js';

/** The expected table, written out on its own: rows are phases, columns events, `-` a refusal. */
const EXPECTED = `
                want      consume   consume-failed  proof     stale     release        handed-over  lost
released        wanted    -         -               -         -         released       released     released
wanted          wanted    standby   -               -         -         released       -            wanted
standby         standby   -         wanted          holding   -         handing-over   -            wanted
holding         holding   -         -               holding   standby   handing-over   -            wanted
handing-over    -         -         -               -         -         -              released     released
`;

function expectedTable(): Map<string, ShardPhase | undefined> {
  const [header, ...rows] = EXPECTED.trim().split('\n').map((line) => line.trim().split(/\s+/));
  const table = new Map<string, ShardPhase | undefined>();
  for (const [phase, ...targets] of rows) {
    targets.forEach((target, i) => table.set(`${phase} ${header![i]}`, target === '-' ? undefined : (target as ShardPhase)));
  }
  return table;
}

const SHARD = 1;
const CONSUMER = 'consumer-of-1';

/** A table of three shards with shard 1 driven into `phase` through the events that lead there. */
function tableIn(phase: ShardPhase): ShardTable<string, string> {
  const table = new ShardTable<string, string>(3, []);
  const steps: Record<ShardPhase, Array<() => unknown>> = {
    released: [],
    wanted: [() => table.want(SHARD)],
    standby: [() => table.want(SHARD), () => table.consume(SHARD, CONSUMER)],
    holding: [() => table.want(SHARD), () => table.consume(SHARD, CONSUMER), () => table.prove(SHARD, 1_000)],
    'handing-over': [() => table.want(SHARD), () => table.consume(SHARD, CONSUMER), () => table.prove(SHARD, 1_000), () => table.release(SHARD)],
  };
  for (const step of steps[phase]) step();
  expect(table.phase(SHARD)).to.equal(phase);
  return table;
}

function fire(table: ShardTable<string, string>, event: ShardEvent): void {
  const fires: Record<ShardEvent, () => unknown> = {
    want: () => table.want(SHARD),
    consume: () => table.consume(SHARD, 'another-consumer'),
    'consume-failed': () => table.consumeFailed(SHARD),
    proof: () => table.prove(SHARD, 2_000),
    stale: () => table.stale(SHARD),
    release: () => table.release(SHARD),
    'handed-over': () => table.handedOver(SHARD),
    lost: () => table.loseAll(),
  };
  fires[event]();
}

describe('shard state table', () => {
  const expected = expectedTable();

  it('covers every phase and event', () => {
    expect(expected.size).to.equal(SHARD_PHASES.length * SHARD_EVENTS.length);
  });

  for (const phase of SHARD_PHASES) {
    for (const event of SHARD_EVENTS) {
      const target = expected.get(`${phase} ${event}`);
      it(`${phase} + ${event} → ${target ?? 'refused'}`, () => {
        expect(nextPhase(phase, event)).to.equal(target);
        const table = tableIn(phase);
        const consumerBefore = table.consumer(SHARD);
        fire(table, event);
        expect(table.phase(SHARD)).to.equal(target ?? phase);
        if (target === undefined) expect(table.consumer(SHARD)).to.equal(consumerBefore);
        // The other shards never move.
        expect([table.phase(0), table.phase(2)]).to.deep.equal(['released', 'released']);
      });
    }
  }

  it('reads consumer, consuming, holding and parking off the phase alone', () => {
    const views = (phase: ShardPhase) => {
      const table = tableIn(phase);
      return {
        consumer: table.consumer(SHARD),
        consuming: table.consuming().includes(SHARD),
        holding: table.holding(SHARD),
        active: table.active().includes(SHARD),
        wanted: table.wantedCount() === 1,
        parks: table.park(SHARD, 'delivery'),
      };
    };
    expect(views('released')).to.deep.equal({ consumer: undefined, consuming: false, holding: false, active: false, wanted: false, parks: false });
    expect(views('wanted')).to.deep.equal({ consumer: undefined, consuming: false, holding: false, active: false, wanted: true, parks: false });
    expect(views('standby')).to.deep.equal({ consumer: CONSUMER, consuming: true, holding: false, active: false, wanted: true, parks: false });
    expect(views('holding')).to.deep.equal({ consumer: CONSUMER, consuming: true, holding: true, active: true, wanted: true, parks: false });
    // Handed over while held: still reported active (asks to it take the queue, to us) until the handover ends.
    expect(views('handing-over')).to.deep.equal({ consumer: CONSUMER, consuming: false, holding: false, active: true, wanted: false, parks: true });
  });

  it('hands over the consumer with the deliveries parked meanwhile, and whether it was held', () => {
    const table = new ShardTable<string, string>(2, [0, 1]);
    table.consume(0, 'c0');
    table.consume(1, 'c1');
    table.prove(1, 1_000);
    const standby = table.release(0)!;
    expect(standby).to.deep.equal({ consumer: 'c0', parked: [], held: false });
    const held = table.release(1)!;
    table.park(1, 'm1');
    table.park(1, 'm2');
    expect(held).to.deep.equal({ consumer: 'c1', parked: ['m1', 'm2'], held: true });
    // Released without a consumer: nothing to hand over.
    const idle = new ShardTable<string, string>(1, [0]);
    expect(idle.release(0)).to.equal(undefined);
    expect(idle.phase(0)).to.equal('released');
  });

  it('answers the shards held when the connection goes, and keeps only what is wanted', () => {
    const table = new ShardTable<string, string>(4, [0, 1, 2, 3]);
    for (const shard of [0, 1, 2]) table.consume(shard, `c${shard}`);
    table.prove(0, 1);
    table.prove(2, 1);
    table.release(2);
    expect(table.loseAll()).to.deep.equal([0, 2]);
    expect([0, 1, 2, 3].map((shard) => table.phase(shard))).to.deep.equal(['wanted', 'wanted', 'released', 'wanted']);
    expect(table.consumers().size).to.equal(0);
    expect(table.active()).to.deep.equal([]);
    expect(table.firstWanted()).to.equal(0);
  });

  it('tells a first proof from a repeated one, and a proof refused', () => {
    const table = tableIn('standby');
    expect(table.prove(SHARD, 1)).to.equal('newly-held');
    expect(table.prove(SHARD, 2)).to.equal('held');
    expect(table.provenAt(SHARD)).to.equal(2);
    expect(tableIn('wanted').prove(SHARD, 1)).to.equal('refused');
  });

  it('drains: a waiter wakes when the last delivery in flight settles, in any phase', async () => {
    const table = tableIn('holding');
    table.begin(SHARD);
    table.begin(SHARD);
    let drained = false;
    const waiting = table.drained(SHARD).then(() => (drained = true));
    table.end(SHARD);
    await Promise.resolve();
    expect(drained).to.equal(false);
    table.loseAll(); // deliveries of a lost connection still settle and count themselves out
    table.end(SHARD);
    await waiting;
    expect(drained).to.equal(true);
    expect(table.inFlight(SHARD)).to.equal(0);
    table.end(SHARD); // never below zero
    expect(table.inFlight(SHARD)).to.equal(0);
    await table.drained(SHARD);
  });
});
