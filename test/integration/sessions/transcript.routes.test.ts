// Invariant: every output line, prompt, tool step and status change of a session is one transcript entry with a
// gap-free seq; `GET /api/public/sessions/{id}/transcript` pages them (limit 1-1000, bad values 400), `format=ndjson`
// streams them all through a real socket; another org's session is 404; the stream `…/transcript/stream?after=N` sends
// exactly the entries after N, each once, in order, also while entries are being written and after a reconnect with
// Last-Event-ID; TROUPE_TRANSCRIPT_MAX_BYTES ends a transcript with one notice and counts what it dropped; the org's
// retention setting (admins and owners) decides what the sweeper deletes, in batches, leaving the 64 KiB tail.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { openSse } from '../streams/sse-client.js';
import { eventually } from '../../support/transport.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from './support.js';
import { sweepTranscripts } from '../../../actors/services/transcripts/retention-sweeper.js';

const entriesOf = async (t: TestNode, org: Org, id: string, query = '') => {
  const res = await t.inject('GET', `/api/public/sessions/${id}/transcript${query}`, { token: org.apiKey });
  expect(res.status, res.text).to.equal(200);
  return res.json;
};

/** Every entry of the transcript, page by page. */
async function allEntries(t: TestNode, org: Org, id: string, limit = 1000): Promise<any[]> {
  const all: any[] = [];
  let after = 0;
  for (;;) {
    const page = await entriesOf(t, org, id, `?after=${after}&limit=${limit}`);
    all.push(...page.entries);
    if (page.next === null) return all;
    after = page.next;
  }
}

const output = (t: TestNode, d: Daemon, id: string, chunks: string[]) =>
  t.inject('POST', `/api/sessions/${id}/output`, { token: d.runtimeJwt, body: { workerId: d.workerId, chunks } });

async function runningSession(t: TestNode, org: Org, d: Daemon, prompt = 'Fix ENG-1'): Promise<string> {
  const id = await dispatch(t, org, { prompt });
  await t.inject('POST', '/api/daemon/poll', { token: d.runtimeJwt, body: { workerId: d.workerId, capacity: 50 } });
  expect((await report(t, d, id, 'claimed')).status).to.equal(200);
  expect((await report(t, d, id, 'running')).status).to.equal(200);
  return id;
}

const gapFree = (entries: { seq: number }[], from = 1) => entries.forEach((e, i) => expect(e.seq, `entry ${i}`).to.equal(from + i));

for (const { set, skip } of engineSets) describe(`session transcript routes (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let daemon: Daemon;
  before(async () => {
    t = await startTestNode({ engines: set, config: { transcriptMaxBytes: 32_768 } });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
    daemon = await registerDaemon(t, acme);
  });
  after(() => t?.close());

  it('records prompts, status changes, output lines and tool steps as entries with a gap-free seq', async () => {
    const id = await runningSession(t, acme, daemon, 'Fix the flaky test');
    expect((await output(t, daemon, id, ['first line\n', 'second line\n'])).status).to.equal(202);
    const steps = await t.inject('POST', `/api/sessions/${id}/steps`, {
      token: daemon.runtimeJwt, body: { workerId: daemon.workerId, steps: [{ tool: 'Bash', summary: 'npm test', at: new Date().toISOString(), id: 's1' }] },
    });
    expect(steps.status, steps.text).to.equal(202);
    // A retried request adds no entry twice.
    await t.inject('POST', `/api/sessions/${id}/steps`, {
      token: daemon.runtimeJwt, body: { workerId: daemon.workerId, steps: [{ tool: 'Bash', summary: 'npm test', at: new Date().toISOString(), id: 's1' }] },
    });
    expect((await t.inject('POST', `/api/public/sessions/${id}/prompt`, { token: acme.apiKey, body: { prompt: 'also the lint' } })).status).to.equal(200);
    expect((await output(t, daemon, id, ['third\n'])).status).to.equal(202);
    expect((await report(t, daemon, id, 'finalizing', { costUsd: 0.5 })).status).to.equal(200);
    expect((await report(t, daemon, id, 'completed', { costUsd: 0.5 })).status).to.equal(200);

    const page = await entriesOf(t, acme, id);
    gapFree(page.entries);
    expect(page.entries.map((e: any) => [e.kind, e.text])).to.deep.equal([
      ['status', 'absent → pending'], ['prompt', 'Fix the flaky test'], ['status', 'pending → claimed'], ['status', 'claimed → running'],
      ['output', 'first line'], ['output', 'second line'], ['tool', 'Bash: npm test'], ['prompt', 'also the lint'], ['output', 'third'],
      ['status', 'running → finalizing'], ['status', 'finalizing → completed'],
    ]);
    expect(page).to.include({ next: null, lastSeq: 11, purgedThrough: 0, cut: null });
    expect(page.entries[3]).to.include({ status: 'running', previousStatus: 'claimed', workerId: daemon.workerId, run: 1 });
    expect(page.entries[6]).to.include({ tool: 'Bash', stepId: 's1' });
    expect(page.entries[7]).to.include({ queued: true });
    for (const e of page.entries) expect(Date.parse(e.at), e.text).to.be.a('number').and.not.NaN;
    // The detail keeps its 64 KiB tail as before.
    const detail = await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey });
    expect(detail.json.output.tail).to.equal('first line\nsecond line\nthird\n');
  });

  it('keeps each line once when a worker retries a batch: a repeat adds nothing, an overlap only its new lines, a new claim counts afresh', async () => {
    const id = await runningSession(t, acme, daemon, 'Retry me');
    const relayed = (chunks: string[], relay: { id: string; firstChunk: number }) =>
      t.inject('POST', `/api/sessions/${id}/output`, { token: daemon.runtimeJwt, body: { workerId: daemon.workerId, chunks, relay } });
    const first = await relayed(['one\n', 'two\n'], { id: 'r1-claim', firstChunk: 0 });
    expect(first.status, first.text).to.equal(202);
    expect(first.json.repeated).to.equal(0);
    const retried = await relayed(['one\n', 'two\n'], { id: 'r1-claim', firstChunk: 0 });
    expect(retried.json).to.include({ accepted: 2, repeated: 2 });
    const overlapping = await relayed(['two\n', 'three\n', 'four\n'], { id: 'r1-claim', firstChunk: 1 });
    expect(overlapping.json).to.include({ accepted: 3, repeated: 1 });
    // Another claim's relay numbers its chunks from 0: nothing of it is taken for a repeat.
    expect((await relayed(['five\n'], { id: 'r1-again', firstChunk: 0 })).json.repeated).to.equal(0);
    const outputs = (await allEntries(t, acme, id)).filter((e) => e.kind === 'output');
    expect(outputs.map((e) => e.text)).to.deep.equal(['one', 'two', 'three', 'four', 'five']);
    const detail = await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey });
    expect(detail.json.output.tail).to.equal('one\ntwo\nthree\nfour\nfive\n');
    for (const relay of [{ id: 'bad id', firstChunk: 0 }, { id: 'r', firstChunk: -1 }, { id: 'r' }]) {
      const res = await t.inject('POST', `/api/sessions/${id}/output`, { token: daemon.runtimeJwt, body: { workerId: daemon.workerId, chunks: ['x\n'], relay } });
      expect(res.status, JSON.stringify(relay)).to.equal(400);
    }
  });

  it('a run the server stops for its budget ends with a notice saying why, beside the status change', async () => {
    const budget = await t.inject('PUT', `/api/projects/${acme.projectId}/budget`, { token: acme.ownerToken, body: { perSessionUsd: 0.5 } });
    expect(budget.status, budget.text).to.equal(200);
    try {
      const id = await dispatch(t, acme, { prompt: 'Spend a lot' });
      await t.inject('POST', '/api/daemon/poll', { token: daemon.runtimeJwt, body: { workerId: daemon.workerId, capacity: 50 } });
      expect((await report(t, daemon, id, 'claimed')).status).to.equal(200);
      expect((await report(t, daemon, id, 'running', { costUsd: 2 })).status).to.equal(200);
      const entries = (await entriesOf(t, acme, id)).entries;
      gapFree(entries);
      const notice = entries.find((e: any) => e.kind === 'notice');
      expect(notice, JSON.stringify(entries)).to.include({ stopReason: 'budget', costUsd: 2, limitUsd: 0.5 });
      expect(notice.text).to.include('budget');
      expect(entries.filter((e: any) => e.kind === 'status').map((e: any) => e.text).at(-1)).to.equal('running → stopped');
    } finally {
      await t.inject('PUT', `/api/projects/${acme.projectId}/budget`, { token: acme.ownerToken, body: { perSessionUsd: null } });
    }
  });

  it('pages with after and limit, searches with q, and refuses bad values with 400', async () => {
    const id = await runningSession(t, acme, daemon);
    await output(t, daemon, id, Array.from({ length: 25 }, (_, i) => `line ${i}\n`));
    const all = await allEntries(t, acme, id, 7);
    gapFree(all);
    expect(all).to.have.length(3 + 1 + 25);
    const first = await entriesOf(t, acme, id, '?limit=7');
    expect(first.entries).to.have.length(7);
    expect(first.next).to.equal(7);
    const found = await entriesOf(t, acme, id, '?q=LINE%201');
    expect(found.entries.map((e: any) => e.text)).to.deep.equal(['line 1', ...Array.from({ length: 10 }, (_, i) => `line ${10 + i}`)]);
    for (const query of ['?limit=0', '?limit=1001', '?limit=abc', '?after=-1', '?after=1.5', '?after=x', '?format=xml', '?format=ndjson&limit=5', '?nope=1']) {
      const res = await t.inject('GET', `/api/public/sessions/${id}/transcript${query}`, { token: acme.apiKey });
      expect(res.status, query).to.equal(400);
      expect(res.json.code, query).to.be.a('string');
    }
    expect((await t.inject('GET', `/api/public/sessions/${id}/transcript?limit=1000`, { token: acme.apiKey })).status).to.equal(200);
  });

  it('reads at most 5,000 entries a search page, and says where the search goes on', async () => {
    const id = await runningSession(t, acme, daemon);
    for (let i = 0; i < 12; i++) expect((await output(t, daemon, id, Array.from({ length: 500 }, (_, j) => `w${i * 500 + j}\n`))).status).to.equal(202);
    const first = await entriesOf(t, acme, id, '?q=w5999');
    expect(first.entries, 'the match lies past the first window').to.deep.equal([]);
    expect(first.next).to.equal(5000);
    const second = await entriesOf(t, acme, id, `?q=w5999&after=${first.next as number}`);
    expect(second.entries.map((e: any) => e.text)).to.deep.equal(['w5999']);
    expect(second.next, 'the window reached the end').to.equal(null);
  });

  it("is 404 for another org's session, an unknown id and a malformed one, and 401 without a credential", async () => {
    const id = await runningSession(t, acme, daemon);
    for (const path of [`/api/public/sessions/${id}/transcript`, `/api/public/sessions/${id}/transcript?format=ndjson`]) {
      expect((await t.inject('GET', path, { token: globex.apiKey })).status, path).to.equal(404);
    }
    expect((await t.call('GET', `/api/public/sessions/${id}/transcript/stream`, { token: globex.apiKey })).status).to.equal(404);
    expect((await t.inject('GET', '/api/public/sessions/0000000000000000/transcript', { token: acme.apiKey })).status).to.equal(404);
    expect((await t.inject('GET', '/api/public/sessions/..%2F/transcript', { token: acme.apiKey })).status).to.equal(404);
    expect((await t.inject('GET', `/api/public/sessions/${id}/transcript`)).status).to.equal(401);
  });

  it('downloads the whole transcript as NDJSON through a socket, a page at a time', async () => {
    const id = await runningSession(t, acme, daemon);
    // More than one page of the download (1000 entries).
    for (let i = 0; i < 3; i++) await output(t, daemon, id, Array.from({ length: 500 }, (_, j) => `l${i * 500 + j}\n`));
    const res = await fetch(`${t.url}/api/public/sessions/${id}/transcript?format=ndjson&after=2`, { headers: { authorization: `Bearer ${acme.apiKey}` } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/x-ndjson/);
    expect(res.headers.get('content-disposition')).to.include(`session-${id}-transcript.ndjson`);
    const lines = (await res.text()).split('\n');
    expect(lines.pop()).to.equal('');
    const entries = lines.map((l) => JSON.parse(l));
    gapFree(entries, 3);
    expect(entries).to.have.length(1 + 1 + 1500);
    expect(entries.at(-1)).to.include({ kind: 'output', text: 'l1499' });
  });

  it('the stream from seq N sends exactly the entries after N, once each, in order, while they are being written', async () => {
    const id = await runningSession(t, acme, daemon);
    await output(t, daemon, id, ['before 1\n', 'before 2\n']);
    const read = await entriesOf(t, acme, id);
    const n = read.entries.at(-1).seq;
    // Writes go on while the client switches from the read to the stream.
    const writing = (async () => {
      for (let i = 0; i < 20; i++) await output(t, daemon, id, [`during ${i}a\n`, `during ${i}b\n`]);
    })();
    const stream = await openSse(`${t.url}/api/public/sessions/${id}/transcript/stream?after=${n}`, { token: acme.apiKey });
    expect(stream.status).to.equal(200);
    await writing;
    await report(t, daemon, id, 'finalizing');
    await report(t, daemon, id, 'completed');
    await stream.next((f) => f.event === 'transcript.entry' && f.data.kind === 'status' && f.data.status === 'completed', 10_000);
    const streamed = stream.frames.filter((f) => f.event === 'transcript.entry').map((f) => f.data);
    stream.close();
    gapFree(streamed, n + 1);
    expect(stream.frames.filter((f) => f.event === 'transcript.entry').map((f) => f.id)).to.deep.equal(streamed.map((e) => String(e.seq)));
    const stored = (await allEntries(t, acme, id)).filter((e) => e.seq > n);
    expect(streamed).to.deep.equal(stored);
    expect(streamed.filter((e) => e.kind === 'output')).to.have.length(40);

    // A reconnect with Last-Event-ID resumes after that seq, and `after` below it is overridden.
    const resumed = await openSse(`${t.url}/api/public/sessions/${id}/transcript/stream?after=0`, { token: acme.apiKey, lastEventId: String(n + 10) });
    const last = await resumed.next((f) => f.data?.seq === stored.at(-1).seq, 10_000);
    expect(last.data.status).to.equal('completed');
    expect(resumed.frames.filter((f) => f.event === 'transcript.entry').map((f) => f.data)).to.deep.equal(stored.filter((e) => e.seq > n + 10));
    resumed.close();
    for (const bad of ['?after=-3', '?after=abc']) {
      expect((await t.call('GET', `/api/public/sessions/${id}/transcript/stream${bad}`, { token: acme.apiKey })).status, bad).to.equal(400);
    }
  });

  it('TROUPE_TRANSCRIPT_MAX_BYTES ends the output with one notice saying what was cut; later output is counted, not kept; status changes still are', async () => {
    const id = await runningSession(t, acme, daemon);
    const line = `${'x'.repeat(999)}\n`;
    // 32768 bytes of cap: 32 lines of 999 bytes fit, after the first entries.
    for (let i = 0; i < 6; i++) expect((await output(t, daemon, id, Array.from({ length: 10 }, () => line))).status).to.equal(202);
    expect((await output(t, daemon, id, ['after the end\n'])).status).to.equal(202);
    await report(t, daemon, id, 'finalizing');
    await report(t, daemon, id, 'completed');
    const all = await allEntries(t, acme, id);
    gapFree(all);
    const notices = all.filter((e) => e.kind === 'notice');
    expect(notices).to.have.length(1);
    expect(notices[0].text).to.include('32768 bytes').and.include('TROUPE_TRANSCRIPT_MAX_BYTES');
    // After the notice: only the status changes, which are never lost to output.
    expect(all.filter((e) => e.seq > notices[0].seq).map((e) => e.text)).to.deep.equal(['running → finalizing', 'finalizing → completed']);
    const kept = all.filter((e) => e.kind === 'output').length;
    expect(kept).to.equal(32);
    expect(all.filter((e) => e.kind === 'output').every((e) => e.seq < notices[0].seq)).to.equal(true);
    const page = await entriesOf(t, acme, id);
    expect(page.cut).to.deep.equal({ atSeq: notices[0].seq, droppedEntries: 61 - kept, droppedBytes: (60 - kept) * 999 + 'after the end'.length });
    // The detail's tail has every line.
    const detail = await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey });
    expect(detail.json.output.totalBytes).to.equal(60 * 1000 + 'after the end\n'.length);
  });

  it('org settings: admins and owners set transcriptRetentionDays (default 30, 0 forever); others 403; bad bodies 400', async () => {
    const path = `/api/org/${acme.orgId}/settings`;
    const initial = await t.inject('GET', path, { token: acme.memberToken });
    expect(initial.status).to.equal(200);
    expect(initial.json).to.include({ orgId: acme.orgId, transcriptRetentionDays: 30, updatedAt: null });
    expect((await t.inject('PUT', path, { token: acme.memberToken, body: { transcriptRetentionDays: 7 } })).status).to.equal(403);
    for (const body of [{}, { transcriptRetentionDays: -1 }, { transcriptRetentionDays: 1.5 }, { transcriptRetentionDays: '7' }, { transcriptRetentionDays: 36501 }, { other: 1 }]) {
      const res = await t.inject('PUT', path, { token: acme.ownerToken, body });
      expect(res.status, JSON.stringify(body)).to.equal(400);
    }
    expect((await t.inject('GET', path, { token: acme.apiKey })).json.transcriptRetentionDays, 'nothing changed').to.equal(30);
    const set = await t.inject('PUT', path, { token: acme.ownerToken, body: { transcriptRetentionDays: 0 } });
    expect(set.status, set.text).to.equal(200);
    expect(set.json).to.include({ transcriptRetentionDays: 0 });
    expect(set.json.updatedBy).to.be.a('string');
    // Another org's settings are not the caller's to read or change.
    expect((await t.inject('GET', `/api/org/${acme.orgId}/settings`, { token: globex.ownerToken })).status).to.equal(403);
    expect((await t.inject('PUT', `/api/org/${acme.orgId}/settings`, { token: globex.ownerToken, body: { transcriptRetentionDays: 1 } })).status).to.equal(403);
    expect((await t.inject('GET', path, { token: acme.apiKey })).json.transcriptRetentionDays).to.equal(0);
    await t.inject('PUT', path, { token: acme.ownerToken, body: { transcriptRetentionDays: 30 } });
    // Each change is in the org's audit chain, with the value before and after (it passes through the audit outbox).
    await eventually(async () => {
      const audit = await t.inject('GET', '/api/audit?limit=500', { token: acme.ownerToken });
      const changes = (audit.json.entries as { type: string; payload: any }[]).filter((e) => e.type === 'org.settings.changed');
      return changes.length === 2 && changes.some((e) => e.payload.before.transcriptRetentionDays === 30 && e.payload.after.transcriptRetentionDays === 0);
    }, 'the settings changes audited', 10_000);
  });

  it("the sweeper deletes transcripts older than their org's retention in batches, keeps the 64 KiB tail and the numbering", async () => {
    const id = await runningSession(t, acme, daemon);
    await output(t, daemon, id, Array.from({ length: 30 }, (_, i) => `old ${i}\n`));
    const keep = await runningSession(t, globex, await registerDaemon(t, globex));
    expect((await t.inject('PUT', `/api/org/${globex.orgId}/settings`, { token: globex.ownerToken, body: { transcriptRetentionDays: 0 } })).status).to.equal(200);
    expect((await t.inject('PUT', `/api/org/${acme.orgId}/settings`, { token: acme.ownerToken, body: { transcriptRetentionDays: 2 } })).status).to.equal(200);
    const lastSeq = (await entriesOf(t, acme, id)).lastSeq;
    const deps = t.node.deps;
    // One day later nothing is old enough.
    expect(await sweepTranscripts({ db: deps.db, clock: { now: () => Date.now() + 86_400_000 } } as never)).to.equal(0);
    // Three days later: batches of at most 10 entries, at most two per pass, so a pass deletes at most 20 entries and
    // Acme's transcripts (this one among them) go over several passes.
    const later = { db: deps.db, clock: { now: () => Date.now() + 3 * 86_400_000 } } as never;
    let passes = 0;
    while ((await entriesOf(t, acme, id)).purgedThrough < lastSeq) {
      const deleted = await sweepTranscripts(later, { transcripts: 1000, batch: 10, batches: 2 });
      expect(deleted).to.be.within(1, 20);
      expect(++passes).to.be.below(500);
    }
    expect(passes).to.be.at.least(2);
    const page = await entriesOf(t, acme, id);
    expect(page).to.include({ purgedThrough: lastSeq, lastSeq });
    expect(page.entries).to.deep.equal([]);
    // Globex keeps its transcripts forever; the detail keeps its tail; new entries continue the numbering.
    expect((await entriesOf(t, globex, keep)).entries.length).to.be.greaterThan(0);
    expect((await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey })).json.output.tail).to.include('old 29\n');
    await output(t, daemon, id, ['new\n']);
    expect((await entriesOf(t, acme, id)).entries.map((e: any) => [e.seq, e.text])).to.deep.equal([[lastSeq + 1, 'new']]);
  });
});
