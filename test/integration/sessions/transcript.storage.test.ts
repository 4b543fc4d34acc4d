// Invariant: concurrent writers of one session's transcript (two nodes' pools, output batches, uncapped status
// entries) get gap-free seqs 1..N, each writer's entries in its order; at the cap exactly one notice is written
// whatever the interleaving, nothing capped is kept after it, and uncapped entries still are; the sweeper's batches
// delete only ranges older than retention.
import { expect } from 'chai';
import { dbEngines, type TestDb } from '../../support/db.js';
import { appendTranscript, readTranscript, transcriptHead, transcriptPages } from '../../../storage/sessions/transcript.js';
import type { NewTranscriptEntry } from '../../../storage/sessions/transcript-kinds.js';

const ORG = '00000000-0000-4000-8000-000000000001';
const lines = (writer: number, n: number, size = 10): NewTranscriptEntry[] =>
  Array.from({ length: n }, (_, i) => ({ kind: 'output' as const, text: `w${writer}:${i}:`.padEnd(size, '.'), at: new Date() }));

for (const engine of dbEngines) describe(`session transcript storage (${engine.name})`, function () {
  if (engine.skip) return;
  this.timeout(60_000);
  let db: TestDb;
  before(async () => { db = await engine.open('transcript'); });
  after(() => db?.drop());

  it('gives concurrent writers gap-free seqs, each writer in its own order', async () => {
    const session = 'a000000000000001';
    const other = engine.name === 'postgres' ? await db.reopen() : db.knex;
    await Promise.all(Array.from({ length: 12 }, async (_, w) => {
      for (let b = 0; b < 5; b++) {
        const knex = w % 2 === 0 ? db.knex : other;
        const batch = lines(w, 7).map((e, i) => ({ ...e, text: `w${w}:${b * 7 + i}` }));
        // Every third batch is an uncapped one (a status change's path), interleaving with capped ones.
        await appendTranscript(knex, ORG, session, batch, b % 3 === 0 ? null : 1 << 30, new Date());
      }
    }));
    const all: { seq: number; text: string }[] = [];
    for await (const page of transcriptPages(db.knex, ORG, session, 0, 100)) all.push(...page);
    expect(all.map((e) => e.seq)).to.deep.equal(Array.from({ length: 12 * 35 }, (_, i) => i + 1));
    for (let w = 0; w < 12; w++) {
      const mine = all.filter((e) => e.text.startsWith(`w${w}:`)).map((e) => Number(e.text.split(':')[1]));
      expect(mine, `writer ${w}`).to.deep.equal(Array.from({ length: 35 }, (_, i) => i));
    }
    expect((await transcriptHead(db.knex, ORG, session)).lastSeq).to.equal(420);
  });

  it('writes exactly one notice at the cap however writers interleave, and keeps uncapped entries after it', async () => {
    const session = 'a000000000000002';
    const cap = 2000;
    // 8 writers × 10 batches × 3 entries of 10 bytes: 2400 bytes offered against a cap of 2000.
    await Promise.all(Array.from({ length: 8 }, async (_, w) => {
      for (let b = 0; b < 10; b++) await appendTranscript(db.knex, ORG, session, lines(w, 3), cap, new Date());
    }));
    await appendTranscript(db.knex, ORG, session, [{ kind: 'status', text: 'running → completed', at: new Date(), data: { status: 'completed' } }], null, new Date());
    const all = await readTranscript(db.knex, ORG, session, 0, 1000);
    expect(all.map((e) => e.seq)).to.deep.equal(Array.from({ length: all.length }, (_, i) => i + 1));
    const notices = all.filter((e) => e.kind === 'notice');
    expect(notices).to.have.length(1);
    const outputs = all.filter((e) => e.kind === 'output');
    expect(outputs.length * 10).to.be.at.most(cap);
    expect(outputs.every((e) => e.seq < notices[0]!.seq)).to.equal(true);
    expect(all.at(-1)).to.include({ kind: 'status', status: 'completed' });
    const head = await transcriptHead(db.knex, ORG, session);
    expect(head.cut).to.deep.equal({ atSeq: notices[0]!.seq, droppedEntries: 240 - outputs.length, droppedBytes: (240 - outputs.length) * 10 });
  });

  it('keeps text with NUL and any Unicode, and never splits an entry', async () => {
    const session = 'a000000000000003';
    const texts = ['nul\u0000here', '😀 emoji', 'ünïcödé', '', ' '.repeat(5000)];
    await appendTranscript(db.knex, ORG, session, texts.map((text) => ({ kind: 'output' as const, text, at: new Date() })), 1 << 20, new Date());
    const read = await readTranscript(db.knex, ORG, session, 0, 10);
    expect(read.map((e) => e.text)).to.deep.equal(['nul\uFFFDhere', ...texts.slice(1)]);
  });
});
