// Invariant: what a server sends the worker is data, never a path or a log line of its own. An id is used in a path
// only when it has its format (the same formats the server gives out), and every path the worker makes from one
// lies strictly inside its dir; the state dir refuses, and never lists, a report or credential named otherwise, and
// keeps no stream position a header cannot carry; a log line, text or JSON, holds no raw control character
// (C0, DEL, C1, U+2028/9) and no field longer than its cap; a redirect is followed only within the origin asked.
import { expect } from 'chai';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { publicIdPattern } from '../../../actors/kinds/session/index.js';
import { freshDir } from '../../../ops/cli/worker/agent.js';
import { insideDir } from '../../../ops/cli/worker/inside-dir.js';
import { createLog } from '../../../ops/cli/worker/log.js';
import { capText, escapeControls } from '../../../ops/cli/worker/log-text.js';
import { RedirectRefused, sameOriginFetch } from '../../../ops/cli/worker/redirects.js';
import { isSessionId, isWorkerId, sessionIdPattern } from '../../../ops/cli/worker/server-ids.js';
import { StateDir } from '../../../ops/cli/worker/state.js';

const temp = () => mkdtempSync(path.join(os.tmpdir(), 'troupe-worker-unit-'));
const GOOD = 'a1b2c3d4e5f60718';
const HOSTILE = ['../x', '../../victim/precious', '/etc/passwd', '..', '.', '', 'a/b', 'a\0b', 'A1B2C3D4E5F60718', `${GOOD}0`, `${GOOD}\n`];

describe('troupe worker: server data is data', () => {
  it('knows the server\'s id formats', () => {
    expect(sessionIdPattern.source).to.equal(publicIdPattern.source);
    expect(isSessionId(GOOD)).to.equal(true);
    for (const id of [...HOSTILE, 42, null, undefined, { id: GOOD }]) expect(isSessionId(id), JSON.stringify(id)).to.equal(false);
    expect(isWorkerId('712b35e8-23b1-47ff-b74d-0ce1320e341f')).to.equal(true);
    expect(isWorkerId('../712b35e8-23b1-47ff-b74d-0ce1320e341f')).to.equal(false);
  });

  it('makes paths strictly inside their dir, and refuses every other', () => {
    const root = temp();
    expect(insideDir(root, GOOD)).to.equal(path.join(root, GOOD));
    expect(insideDir(root, 'reports', `${GOOD}.json`)).to.equal(path.join(root, 'reports', `${GOOD}.json`));
    expect(insideDir(root, 'a/../b')).to.equal(path.join(root, 'b'));
    for (const part of ['..', '../x', '../../victim/precious', '/etc/passwd', '.', '', 'a/../..', 'x\0y', `..${path.sep}${path.basename(root)}x`]) {
      expect(() => insideDir(root, part), JSON.stringify(part)).to.throw(/refusing a path outside/);
    }
  });

  it('makes an agent dir only for a session id, inside the work dir', () => {
    const root = temp();
    const work = path.join(root, 'work');
    expect(freshDir(work, GOOD)).to.equal(path.join(work, GOOD));
    expect(freshDir(work, GOOD)).to.equal(path.join(work, `${GOOD}.2`));
    for (const id of HOSTILE) expect(() => freshDir(work, id), JSON.stringify(id)).to.throw(/not a session id/);
    expect(readdirSync(root)).to.deep.equal(['work']);
    expect(readdirSync(work).sort()).to.deep.equal([GOOD, `${GOOD}.2`]);
  });

  it('keeps reports and credentials only under names of their format, and lists only those', () => {
    const root = temp();
    const state = new StateDir(path.join(root, 'state'));
    writeFileSync(path.join(root, 'precious.json'), '{}');
    const report = { sessionId: GOOD, workerId: 'w', steps: ['failed' as const], costUsd: 0, exitCode: 1 };
    state.saveReport(report);
    for (const id of HOSTILE) {
      expect(() => state.saveReport({ ...report, sessionId: id }), JSON.stringify(id)).to.throw(/not a session id/);
      expect(() => state.dropReport(id), JSON.stringify(id)).to.throw(/not a session id/);
    }
    // A file put there by hand (or by an older worker) under another name, or naming another session inside, is not a report.
    writeFileSync(path.join(state.reportsDir, 'notes.json'), JSON.stringify({ ...report, sessionId: '../../precious' }));
    writeFileSync(path.join(state.reportsDir, 'b1b2c3d4e5f60718.json'), JSON.stringify({ ...report, sessionId: '../../precious' }));
    expect(state.pendingReports().map((r) => r.sessionId)).to.deep.equal([GOOD]);
    state.dropReport(GOOD);
    expect(existsSync(path.join(root, 'precious.json'))).to.equal(true);

    for (const kind of ['../../precious.json', '..', '/etc/passwd', 'Key', ['llm-key']]) {
      expect(() => state.writeCredential(kind as string, 'v'), JSON.stringify(kind)).to.throw(/refusing credential kind/);
    }
    expect(() => state.writeCredential('llm-key', { not: 'a string' } as unknown as string)).to.throw(/refusing credential kind/);
    expect(state.writeCredential('llm-key', 'v')).to.equal(path.join(state.credentialsDir, 'llm-key'));
  });

  it('keeps no rotate-stream position a header cannot carry', () => {
    const state = new StateDir(path.join(temp(), 'state'));
    state.setCredentialStreamPosition('2026-11-29T10:00:00.000Z.llm-key');
    for (const id of ['a\rb', 'a\nb', 'x'.repeat(257), 'é', '']) state.setCredentialStreamPosition(id);
    expect(state.credentialStreamPosition()).to.equal('2026-11-29T10:00:00.000Z.llm-key');
  });

  it('escapes every control character and cuts long strings', () => {
    const controls = ['\u0000', '\u0007', '\t', '\n', '\r', '\u001b', '\u007f', '\u0085', '\u009b', '\u2028', '\u2029'];
    for (const c of controls) expect(escapeControls(`a${c}b`), JSON.stringify(c)).to.equal(`a\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}b`);
    expect(escapeControls('plain text, é and 🙂')).to.equal('plain text, é and 🙂');
    expect(capText('abcdef', 10)).to.equal('abcdef');
    expect(capText('abcdef', 3)).to.equal('abc…(3 more characters)');
    expect(capText('a🙂b', 2)).to.equal('a…(3 more characters)');
  });

  const RAW_CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
  const FORGED = '\n2099-01-01T00:00:00.000Z ERROR forged';

  it('writes one bounded text line per event, with no raw control character', () => {
    const lines: string[] = [];
    const log = createLog('text', (l) => lines.push(l));
    log('warn', 'x', `msg${FORGED}\u001b[2J`, { sessionId: `abc${FORGED}`, op: `op${FORGED}\u009b`, huge: 'y'.repeat(100_000), list: ['\u2028', 'z'.repeat(5000)], plain: 'word' });
    expect(lines).to.have.length(1);
    const line = lines[0]!.slice(0, -1);
    expect(lines[0]!.endsWith('\n')).to.equal(true);
    expect(RAW_CONTROL.test(line), line.slice(0, 300)).to.equal(false);
    expect(line.length).to.be.below(4000);
    expect(line).to.include('msg\\u000a2099-01-01T00:00:00.000Z ERROR forged\\u001b[2J');
    expect(line).to.include('session "abc\\n2099-01-01T00:00:00.000Z ERROR forged" ');
    expect(line).to.include('op="op\\n2099-01-01T00:00:00.000Z ERROR forged\\u009b"');
    expect(line).to.include('plain=word');
    expect(line).to.match(/huge="y{1000}…\(99000 more characters\)"/);
  });

  it('writes one bounded JSON line per event that reads back as what was logged, cut', () => {
    const lines: string[] = [];
    const log = createLog('json', (l) => lines.push(l));
    const op = `op${FORGED}\u009b\u2028`;
    log('warn', 'x', `msg${FORGED}`, { op, huge: 'y'.repeat(100_000), nested: { list: ['z'.repeat(5000)] }, n: 3 });
    expect(lines).to.have.length(1);
    expect(RAW_CONTROL.test(lines[0]!.slice(0, -1))).to.equal(false);
    const parsed = JSON.parse(lines[0]!);
    expect(parsed).to.include({ level: 'warn', event: 'x', msg: `msg${FORGED}`, op, n: 3 });
    expect(parsed.huge).to.equal(`${'y'.repeat(1000)}…(99000 more characters)`);
    expect(parsed.nested).to.be.a('string').with.length.below(1100);
  });

  describe('redirects', () => {
    const fake = (answers: Record<string, Response | (() => Response)>) => {
      const seen: { url: string; method: string; body: string | null; authorization: string | null }[] = [];
      const send = (async (input: Request) => {
        seen.push({ url: input.url, method: input.method, body: input.body ? await input.text() : null, authorization: input.headers.get('authorization') });
        const answer = answers[input.url];
        if (!answer) return new Response('{}', { status: 200 });
        return typeof answer === 'function' ? answer() : answer;
      }) as unknown as typeof fetch;
      return { seen, send };
    };
    const redirect = (status: number, location: string) => () => new Response(null, { status, headers: { location } });
    const post = () => new Request('http://node:8080/api/x', { method: 'POST', body: '{"a":1}', headers: { authorization: 'Bearer t', 'content-type': 'application/json' } });

    it('refuses one to another origin, and tells of it', async () => {
      for (const location of ['http://evil:8080/steal', 'http://node:8081/api/x', 'https://node:8080/api/x', '//evil/x']) {
        const refused: string[] = [];
        const { seen, send } = fake({ 'http://node:8080/api/x': redirect(307, location) });
        const err = await sameOriginFetch((_from, to) => refused.push(to), send)(post()).catch((e: unknown) => e);
        expect(err, location).to.be.instanceOf(RedirectRefused);
        expect(seen.map((s) => s.url), location).to.deep.equal(['http://node:8080/api/x']);
        expect(refused, location).to.have.length(1);
      }
    });

    it('follows one within the origin: 307 with the same request, 303 as a GET', async () => {
      const { seen, send } = fake({ 'http://node:8080/api/x': redirect(307, '/api/y'), 'http://node:8080/api/y': redirect(303, 'http://node:8080/api/z') });
      const res = await sameOriginFetch(() => undefined, send)(post());
      expect(res.status).to.equal(200);
      expect(seen).to.deep.equal([
        { url: 'http://node:8080/api/x', method: 'POST', body: '{"a":1}', authorization: 'Bearer t' },
        { url: 'http://node:8080/api/y', method: 'POST', body: '{"a":1}', authorization: 'Bearer t' },
        { url: 'http://node:8080/api/z', method: 'GET', body: null, authorization: 'Bearer t' },
      ]);
    });

    it('stops after a few hops', async () => {
      const { seen, send } = fake({ 'http://node:8080/api/x': redirect(302, '/api/x') });
      const err = await sameOriginFetch(() => undefined, send)(new Request('http://node:8080/api/x')).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(RedirectRefused);
      expect(seen).to.have.length(6);
    });
  });
});
