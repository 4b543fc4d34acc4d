// Invariant (issue 35 §3, decision 0088): `troupe worker` gives every agent its line to the team: TROUPE_MCP_COMMAND
// (an MCP server on stdio: this worker's own `mcp`), and the token of this one session's run with the node's URL. An
// agent that starts that command and calls request_approval waits for a person and reads the decision; the token
// file lives outside the workspace (0600) and is gone when the run ends. The claude-code preset passes it with
// `--mcp-config` and, with `--agent-approvals`, names `mcp__troupe__approval_prompt` as its permission-prompt tool,
// whose answer follows the approver. `--agent-approvals` with another preset ends the start.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { startNodeProcess, stopAll, type NodeProcess } from '../../cluster/processes.js';
import { engines, skipEngine } from '../../support/engines.js';
import {
  api, detail, dispatch, dropSchema, provision, repoRoot, startWorker, stopWorkers, tempDir, untilStatus, type Api, type ProvisionedOrg,
} from './support.js';

const onPostgres = !skipEngine.postgres;
const schema = `t_mcp_${randomBytes(4).toString('hex')}`;
const sdk = (file: string) => pathToFileURL(path.join(repoRoot, 'node_modules/@modelcontextprotocol/sdk/dist/esm', file)).href;

/**
 * A fake agent that uses its line as an agent would: it records what it was given, starts the MCP server named by
 * TROUPE_MCP_COMMAND (command contract) or by the `--mcp-config` file (as `claude`), calls one tool and prints the
 * answer, as stream-json when started as `claude`.
 */
const fakeAgentSource = `#!/usr/bin/env node
import { appendFileSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { Client } from '${sdk('client/index.js')}';
import { StdioClientTransport } from '${sdk('client/stdio.js')}';
const env = process.env;
const argv = process.argv.slice(2);
const asClaude = env.FAKE_AS_CLAUDE === '1';
const configAt = argv.indexOf('--mcp-config');
const configFile = configAt >= 0 ? argv[configAt + 1] : env.TROUPE_MCP_CONFIG;
appendFileSync(env.FAKE_LOG, JSON.stringify({
  argv, mcpCommand: env.TROUPE_MCP_COMMAND ?? null, hasToken: Boolean(env.TROUPE_SESSION_TOKEN), url: env.TROUPE_URL ?? null,
  configFile, configMode: (statSync(configFile).mode & 0o777).toString(8), cwd: process.cwd(),
}) + '\\n');
let server;
if (asClaude) {
  const { command, args, env: serverEnv } = JSON.parse(readFileSync(configFile, 'utf8')).mcpServers.troupe;
  server = { command, args, env: { PATH: env.PATH, ...serverEnv } };
} else {
  server = { command: '/bin/sh', args: ['-c', 'exec ' + env.TROUPE_MCP_COMMAND], env: { ...env } };
}
const client = new Client({ name: 'fake-agent', version: '1.0.0' });
await client.connect(new StdioClientTransport({ ...server, stderr: 'inherit' }));
await client.callTool({ name: 'report_progress', arguments: { message: 'looking around' } });
const call = asClaude
  ? { name: 'approval_prompt', arguments: { tool_name: 'Bash', input: { command: 'make deploy' } } }
  : { name: 'request_approval', arguments: { summary: 'May I run the migration?', details: 'ALTER TABLE users' } };
const answer = (await client.callTool(call, undefined, { timeout: 120000 })).content[0].text;
await client.close();
if (asClaude) {
  console.log(JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text: 'permission: ' + answer }] } }));
  console.log(JSON.stringify({ type: 'result', subtype: 'success', is_error: false, session_id: 'c0ffee00-0000-4000-8000-000000000001', total_cost_usd: 0.01 }));
} else {
  console.log('decision: ' + answer);
}
`;

describe(`troupe worker: the agent's line to the team, as real processes (node on ${onPostgres ? 'Postgres' : 'PGlite'})`, function () {
  this.timeout(120_000);
  const adminToken = generateAdminToken();
  let node: NodeProcess;
  let a: Api;
  let org: ProvisionedOrg;
  let root: string;
  let agentScript: string;
  let bin: string;

  before(async () => {
    root = tempDir('mcp');
    agentScript = path.join(root, 'fake-line-agent.mjs');
    writeFileSync(agentScript, fakeAgentSource);
    chmodSync(agentScript, 0o755);
    bin = path.join(root, 'bin');
    mkdirSync(bin);
    writeFileSync(path.join(bin, 'claude'), `#!/bin/sh\nFAKE_AS_CLAUDE=1 exec node ${JSON.stringify(agentScript).replaceAll('$', '\\$')} "$@"\n`);
    chmodSync(path.join(bin, 'claude'), 0o755);
    node = await startNodeProcess(`mcp-test-${process.pid}`, {
      TROUPE_DATA_DIR: tempDir('node'), TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken,
      TROUPE_LOG_LEVEL: 'info', AMQP_URL: '', REDIS_URL: '',
      ...(onPostgres ? { DATABASE_URL: engines.postgres, TROUPE_DATABASE_SCHEMA: schema } : { DATABASE_URL: '' }),
    });
    a = api(node.url);
    org = await provision(a, adminToken);
  });
  afterEach(() => stopWorkers());
  after(async () => {
    await stopAll();
    if (onPostgres) await dropSchema(schema);
  });

  const pendingGate = async (sessionId: string): Promise<{ id: string; title: string }> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const res = await a.call('GET', '/api/approval-gates?status=pending', { token: org.ownerToken });
      const gate = (res.json.gates as Array<{ id: string; title: string; sessionId: string }>).find((g) => g.sessionId === sessionId);
      if (gate) return gate;
      if (Date.now() > deadline) throw new Error(`no gate for ${sessionId}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  const decide = (gateId: string, decision: string, comment: string) =>
    a.call('POST', `/api/approval-gates/${gateId}/decide`, { token: org.ownerToken, body: { decision, comment } });
  const logged = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);

  it('a command agent starts TROUPE_MCP_COMMAND, asks for approval, and prints the decision a person made', async () => {
    const log = path.join(root, 'command.jsonl');
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, name: 'line-worker', agentCommand: `node ${agentScript}`, env: { FAKE_LOG: log } });
    await w.waitFor((l) => l.event === 'worker.registered');
    const id = await dispatch(a, org, 'Migrate the users table');
    const gate = await pendingGate(id);
    expect(gate.title).to.equal('Agent asks: May I run the migration?');
    const waiting = await detail(a, org, id);
    expect(waiting.phase).to.equal('waiting for approval');
    expect(waiting.activities.map((x: { kind: string; body: string }) => `${x.kind}: ${x.body}`)).to.include('agent.progress: looking around');

    const [seen] = logged(log);
    expect(seen!.mcpCommand).to.match(/'ops\/cli\/bin\.js' 'mcp'$|\/ops\/cli\/bin\.js' 'mcp'$/);
    expect(seen!).to.include({ hasToken: true, url: node.url, configMode: '600' });
    expect(seen!.configFile.startsWith(seen!.cwd), 'the token file is outside the workspace').to.equal(false);
    expect(existsSync(seen!.configFile)).to.equal(true);

    expect((await decide(gate.id, 'approve', 'during the window')).status).to.equal(200);
    const done = await untilStatus(a, org, id, ['completed', 'failed'], 30_000);
    expect(done.status, done.error ?? '').to.equal('completed');
    const printed = /decision: (.*)/.exec(done.output.tail)?.[1];
    expect(JSON.parse(printed!)).to.include({ decision: 'approved', comment: 'during the window' });
    expect(existsSync(seen!.configFile), 'the token file goes with the run').to.equal(false);
    expect(statSync(path.dirname(path.dirname(seen!.configFile))).isDirectory()).to.equal(true);
  });

  it('claude-code with --agent-approvals: --mcp-config and the permission-prompt tool, answered by the approver', async () => {
    const log = path.join(root, 'claude.jsonl');
    const w = startWorker({
      url: node.url, registrationToken: org.registrationToken, name: 'claude-line-worker', agentCommand: null,
      args: ['--agent', 'claude-code', '--agent-approvals', '--work-dir', path.join(root, 'work-claude')],
      env: { PATH: `${bin}:${process.env.PATH ?? ''}`, FAKE_LOG: log },
    });
    await w.waitFor((l) => l.event === 'worker.registered');
    const id = await dispatch(a, org, 'Deploy the fix');
    const gate = await pendingGate(id);
    expect(gate.title).to.equal('Agent tool Bash: {"command":"make deploy"}');
    const [seen] = logged(log);
    const at = seen!.argv.indexOf('--mcp-config');
    expect(at, 'the preset passes the line').to.be.greaterThan(-1);
    expect(seen!.argv[at + 1]).to.equal(seen!.configFile);
    expect(seen!.argv.slice(at + 2, at + 4)).to.deep.equal(['--permission-prompt-tool', 'mcp__troupe__approval_prompt']);
    expect(seen!.argv.slice(-2)).to.deep.equal(['--', 'Deploy the fix']);

    expect((await decide(gate.id, 'reject', 'not on a Friday')).status).to.equal(200);
    const done = await untilStatus(a, org, id, ['completed', 'failed'], 30_000);
    expect(done.status, done.error ?? '').to.equal('completed');
    const answer = JSON.parse(/permission: (.*)/.exec(done.output.tail)![1]!);
    expect(answer.behavior).to.equal('deny');
    expect(answer.message).to.match(/rejected.*not on a Friday/);
  });

  it('--agent-approvals with a preset that has no permission prompt ends the start, naming the flag', async () => {
    const w = startWorker({
      url: node.url, registrationToken: org.registrationToken, name: 'bad-flag', agentCommand: null, args: ['--agent', 'codex', '--agent-approvals'],
    });
    const exit = await w.exit;
    expect(exit.code).to.equal(1);
    await w.logClosed;
    expect(w.lines.map((l) => l.msg).join('\n')).to.match(/--agent-approvals applies to --agent claude-code/);
  });
});
