// Invariant: a worker treats everything its server sends as data. Against a malicious server (hostile-server.ts:
// session ids that are path parts or absolute paths, ids of the wrong type, case or length, control characters
// that would forge log lines, 200,000-character strings, redirects to another origin) that also offers one good
// session, the real `troupe worker` process stays up, runs the good session to completed, refuses the rest with a
// log line, never follows a redirect to the other origin (which sees no request, so no token), writes its text log
// with every control character escaped and every line bounded, and writes nothing outside its state and work dirs:
// a sibling `victim` dir is byte-for-byte untouched, and the work dir holds the good session's dir alone.
import { expect } from 'chai';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { eventually, startWorker, stopWorkers, tempDir } from './support.js';
import { FORGED, GOOD_SESSION, PROJECT, startHostileServer, type HostileServer } from './hostile-server.js';

/** Every file under `dir` with its content (directories end with `/`), to compare before and after. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true }) as string[]) {
    const full = path.join(dir, entry);
    out[entry] = statSync(full).isDirectory() ? '/' : readFileSync(full, 'utf8');
  }
  return out;
}

const TEXT_LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO |WARN |ERROR) /;
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/;

describe('troupe worker against a malicious server', function () {
  this.timeout(60_000);
  let server: HostileServer;
  let root: string;

  beforeEach(async () => {
    root = tempDir('hostile');
    mkdirSync(path.join(root, 'victim'));
    writeFileSync(path.join(root, 'victim', 'precious.json'), '{"keep":"me"}');
    server = await startHostileServer(path.join(root, 'victim'));
  });
  afterEach(async () => {
    await stopWorkers();
    await server.close();
  });

  it('refuses hostile ids and redirects, logs them escaped, keeps its good session, writes nothing outside its dirs', async () => {
    const victimBefore = snapshot(path.join(root, 'victim'));
    const stateDir = path.join(root, 'state');
    // Two levels down, as the state dir's reports are: `../../victim` from either is the sibling dir.
    const workDir = path.join(root, 'work', 'sessions');
    const w = startWorker({
      url: server.url, registrationToken: `trg_${'A'.repeat(40)}`, stateDir, capacity: 4,
      args: ['--work-dir', workDir, '--log-format', 'text'], env: { ECHO_AGENT_LINES: '10', ECHO_AGENT_TICK_MS: '300' },
    });
    const text = () => w.lines.map((l) => l.msg);
    const exitedWith = () => new Error(`the worker exited; log:\n${text().slice(-30).map((l) => l.slice(0, 300)).join('\n')}`);
    const logged = (what: string, match: (line: string) => boolean, timeoutMs = 20_000) =>
      eventually(what, timeoutMs, () => {
        if (w.exited()) throw exitedWith();
        return text().some(match);
      });

    await eventually('the good session completed', 30_000, () => {
      if (w.exited()) throw exitedWith();
      return server.sessionCalls.some((c) => c.id === GOOD_SESSION && c.route === 'status' && c.body?.status === 'completed');
    });
    // Each hostile surface met more than once, while the good session ran and after.
    await eventually('every hostile surface was served', 10_000, () =>
      server.served.heldSessions >= 2 && server.served.polls >= 2 && server.served.heartbeats >= 2 && server.served.redirects >= 2);
    expect(w.exited(), 'the worker still runs').to.equal(false);

    // Nothing written outside the state and work dirs; in the work dir, the good session's dir alone.
    expect(snapshot(path.join(root, 'victim'))).to.deep.equal(victimBefore);
    expect(readdirSync(root).sort()).to.deep.equal(['state', 'victim', 'work']);
    expect(readdirSync(path.join(root, 'work'))).to.deep.equal(['sessions']);
    expect(readdirSync(workDir)).to.deep.equal([GOOD_SESSION]);
    // The good session's report is dropped once the worker has the answer to `completed`, a moment after the server saw it.
    await eventually('no report left in the state dir', 5_000, () => readdirSync(path.join(stateDir, 'reports')).length === 0)
      .catch(() => expect(readdirSync(path.join(stateDir, 'reports')), 'no report kept for a hostile id').to.deep.equal([]));

    // The good session ran once, in its own dir, and was reported through to completed.
    const good = server.sessionCalls.filter((c) => c.id === GOOD_SESSION && c.route === 'status').map((c) => c.body.status);
    expect(good).to.deep.equal(['claimed', 'running', 'finalizing', 'completed']);
    const output = server.sessionCalls.filter((c) => c.id === GOOD_SESSION && c.route === 'output').flatMap((c) => c.body.chunks).join('');
    expect(output).to.include(`session ${GOOD_SESSION} of project ${PROJECT} in ${path.join(workDir, GOOD_SESSION)}`);
    expect(output).to.include('done\n');
    expect(server.sessionCalls.filter((c) => c.id !== GOOD_SESSION), 'no call about a hostile id').to.deep.equal([]);

    // No request reached the other origin: neither the token nor anything else left for it.
    expect(server.evilRequests).to.deep.equal([]);

    // Each refusal said so in the log.
    await logged('an offer refused', (l) => l.includes('refusing an offer: its session id is not a session id'));
    await logged('a held session ignored', (l) => l.includes('lists a held session whose id is not a session id'));
    await logged('a redirect refused', (l) => l.includes("refused to follow the server's redirect to another origin"));

    // Every line of the text log is a line the worker wrote: its own timestamp, no raw control character, bounded.
    for (const line of text()) {
      expect(line.slice(0, 300), 'a line the worker wrote').to.match(TEXT_LINE);
      expect(RAW_CONTROL.test(line), `a raw control character in ${JSON.stringify(line.slice(0, 200))}`).to.equal(false);
      expect(line.length, 'a bounded line').to.be.below(8000);
    }
    expect(text().some((l) => l.startsWith(FORGED.slice(0, 20))), 'no forged line').to.equal(false);
    expect(text().some((l) => l.includes(`\\u000a${FORGED}`) || l.includes(`\\n${FORGED}`)), 'the forged line shown escaped').to.equal(true);
  });
});
