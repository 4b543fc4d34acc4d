import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { unwrap } from '../../../http/client/index.js';
import { CliError, CliFinding, orgApi, type ClientOptions } from '../client.js';
import { printJson } from '../print-json.js';
import { addTranscriptCommand } from './session-transcript.js';
import { readDetail, watchSession, type SessionDetail, type WatchPrinter } from '../session-watch.js';
import { AGENT_PRESETS, type AgentPreset } from '../../../schemas/repositories/repository.js';

/**
 * `troupe session dispatch|show|stop|watch|transcript`: one agent session, with an org credential (a user token or API key).
 * Readable text by default; `--json` for scripts (`watch --json` prints one JSON object a line).
 *
 * Exit codes: 0 done (for watch: the session completed); 1 the node refused or could not be reached, or a flag is
 * wrong; 2 watch saw the session end failed or stopped; 130 interrupted (Ctrl-C stops watching, not the session).
 */

const tokenHelp = 'user token or API key of the org (env TROUPE_TOKEN)';
const exitCodesHelp = `
Exit codes: 0 done (watch: the session completed), 1 refused or unreachable, 2 (watch) the session ended failed or
stopped, 130 interrupted (Ctrl-C stops watching; the session goes on).`;

interface DispatchOptions {
  project?: string; prompt?: string; promptFile?: string; provider?: string; workType?: string; agentCard?: string;
  trackerIssue?: string; repository?: string; ref?: string; agent?: string; watch?: boolean; json?: boolean; token?: string;
}

export function sessionCommands(): Command {
  const session = new Command('session').description('dispatch, inspect, stop and follow one agent session (an org credential)');

  session
    .command('dispatch')
    .description('dispatch an agent session to the workers of a project; prints its id (--watch follows it)')
    .option('--project <projectId>', 'the project whose workers run it (env TROUPE_PROJECT; `troupe org create` prints the default one)')
    .option('--prompt <text>', 'what the agent is asked to do')
    .option('--prompt-file <path>', "read the prompt from a file ('-' for stdin)")
    .option('--provider <name>', 'the model provider (default: the router chooses, or the worker)')
    .option('--work-type <type>', 'the kind of work, for routing and analytics')
    .option('--agent-card <id>', 'the agent card to run')
    .option('--tracker-issue <key>', "the tracker issue it works on (e.g. ENG-1); one session per issue runs at a time")
    .option('--repository <id|name|url>', "the project repository the agent works in (see GET /api/projects/{projectId}/repositories)")
    .option('--ref <ref>', "the branch, tag or commit to start from (default: the repository's default branch)")
    .option('--agent <preset>', "the agent to run: command, claude-code, codex or gemini (default: the worker's --agent)")
    .option('--watch', 'follow the session until it ends, as `troupe session watch` does')
    .option('--json', 'print JSON')
    .option('--token <token>', tokenHelp)
    .addHelpText('after', exitCodesHelp)
    .action(async (opts: DispatchOptions, cmd: Command) => {
      const projectId = opts.project ?? process.env.TROUPE_PROJECT;
      if (!projectId) throw new CliError('no project: pass --project <projectId> or set TROUPE_PROJECT');
      const prompt = readPrompt(opts);
      if (opts.agent !== undefined && !(AGENT_PRESETS as readonly string[]).includes(opts.agent)) {
        throw new CliError(`--agent must be one of ${AGENT_PRESETS.join(', ')}`);
      }
      const api = orgApi(cmd.optsWithGlobals() as ClientOptions);
      const body = {
        projectId, prompt,
        ...(opts.provider ? { provider: opts.provider } : {}),
        ...(opts.workType ? { workType: opts.workType } : {}),
        ...(opts.agentCard ? { agentCardId: opts.agentCard } : {}),
        ...(opts.trackerIssue ? { trackerIssue: opts.trackerIssue } : {}),
        ...(opts.repository ? { repository: opts.repository } : {}),
        ...(opts.ref ? { ref: opts.ref } : {}),
        ...(opts.agent ? { agent: opts.agent as AgentPreset } : {}),
      };
      const reply = await unwrap(api.POST('/api/agent-dispatch', { body }));
      if (opts.json && !opts.watch) return printJson(reply);
      if (opts.json) process.stdout.write(`${JSON.stringify({ type: 'dispatched', ...reply })}\n`);
      else if (opts.watch) process.stderr.write(`dispatched session ${reply.sessionId}\n`);
      else {
        process.stdout.write(`${reply.sessionId}\n`);
        process.stderr.write(`dispatched session ${reply.sessionId} (${reply.status}); follow it with: troupe session watch ${reply.sessionId}\n`);
      }
      if (opts.watch) await watchAndExit(cmd, reply.sessionId, opts.json === true);
    });

  session
    .command('show <sessionId>')
    .description('status, project, worker, cost, timeline, prompts and the kept agent output of a session')
    .option('--json', 'print the detail as the node answered it')
    .option('--token <token>', tokenHelp)
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => {
      const detail = await readDetail(orgApi(cmd.optsWithGlobals() as ClientOptions), id);
      if (opts.json) return printJson(detail);
      process.stdout.write(renderDetail(detail));
    });

  session
    .command('stop <sessionId>')
    .description('stop a session: its worker ends the agent (a session already ended is left as it is)')
    .option('--json', 'print the reply as the node answered it')
    .option('--token <token>', tokenHelp)
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => {
      const api = orgApi(cmd.optsWithGlobals() as ClientOptions);
      const reply = await unwrap(api.POST('/api/public/sessions/{id}/stop', { params: { path: { id } } }));
      if (opts.json) return printJson(reply);
      process.stdout.write(reply.stopped
        ? `stopped session ${id} (was ${reply.previousStatus})\n`
        : `session ${id} had already ended (${reply.previousStatus}); nothing to stop\n`);
    });

  session
    .command('watch <sessionId>')
    .description("follow a session live until it ends: status changes and the agent's output (the output already kept first)")
    .option('--json', 'print one JSON object a line: session, output, status, end')
    .option('--token <token>', tokenHelp)
    .addHelpText('after', exitCodesHelp)
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => watchAndExit(cmd, id, opts.json === true));

  addTranscriptCommand(session, tokenHelp);

  return session;
}

function readPrompt(opts: DispatchOptions): string {
  if (opts.prompt !== undefined && opts.promptFile !== undefined) throw new CliError('pass --prompt or --prompt-file, not both');
  let prompt = opts.prompt;
  if (opts.promptFile !== undefined) {
    try {
      prompt = readFileSync(opts.promptFile === '-' ? 0 : opts.promptFile, 'utf8').replace(/\n$/, '');
    } catch (err) {
      throw new CliError(`cannot read --prompt-file ${opts.promptFile}: ${(err as Error).message}`);
    }
  }
  if (!prompt) throw new CliError('no prompt: pass --prompt <text> or --prompt-file <path>');
  return prompt;
}

/** Watches until the end, then exits 0 (completed), 2 (failed or stopped) or 130 (interrupted). */
async function watchAndExit(cmd: Command, id: string, json: boolean): Promise<void> {
  const api = orgApi(cmd.optsWithGlobals() as ClientOptions);
  const interrupted = new AbortController();
  const onSigint = () => interrupted.abort();
  process.once('SIGINT', onSigint);
  try {
    const final = await watchSession(api, id, json ? jsonPrinter() : textPrinter(), { signal: interrupted.signal });
    if (!final) throw new CliFinding(130);
    if (final.status !== 'completed') throw new CliFinding(2);
  } finally {
    process.off('SIGINT', onSigint);
  }
}

const clock = (iso: string | null | undefined): string => (iso ? new Date(iso).toISOString().slice(11, 19) : '--:--:--');
const money = (usd: number): string => `$${usd.toFixed(4)}`;
const seconds = (from: string | null | undefined, to: string | null | undefined): string | undefined =>
  from && to ? `${((Date.parse(to) - Date.parse(from)) / 1000).toFixed(1)} s` : undefined;

/** Output on stdout as the agent printed it; what happens to the session on stderr, one line each. */
function textPrinter(): WatchPrinter {
  let endsWithNewline = true;
  const say = (line: string) => {
    // A status line never lands in the middle of an output line.
    if (!endsWithNewline) process.stdout.write('\n');
    endsWithNewline = true;
    process.stderr.write(`${line}\n`);
  };
  return {
    start: (d) => say(`[${clock(d.updatedAt)}] session ${d.id} is ${d.status} · project ${d.project.name ?? d.project.id}${d.worker ? ` · worker ${d.worker.hostname ?? d.worker.id}` : ''}`),
    output: (text) => {
      process.stdout.write(text);
      endsWithNewline = text.endsWith('\n');
    },
    status: (e) => say(`[${clock(e.at)}] ${e.previousStatus} → ${e.status}`),
    notice: (message) => say(`[${clock(new Date().toISOString())}] ${message}`),
    end: (d) => {
      const took = seconds(d.startedAt ?? d.createdAt, d.finishedAt);
      say(`[${clock(d.finishedAt ?? d.updatedAt)}] ${d.status}${d.error ? `: ${d.error}` : ''} · cost ${money(d.costUsd)}${took ? ` · ${took}` : ''}`);
    },
  };
}

function jsonPrinter(): WatchPrinter {
  const line = (value: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(value)}\n`);
  return {
    start: (d) => line({ type: 'session', id: d.id, status: d.status, projectId: d.project.id, run: d.run }),
    output: (text) => line({ type: 'output', text }),
    status: (e) => line({ type: 'status', previousStatus: e.previousStatus, status: e.status, at: e.at }),
    notice: (message) => line({ type: 'notice', message }),
    end: (d) => line({ type: 'end', id: d.id, status: d.status, costUsd: d.costUsd, error: d.error, finishedAt: d.finishedAt ?? null }),
  };
}

/** What the current run's worker reported: its agent, tokens, branch and push, and the pull request (issue 34). */
function runRows(d: SessionDetail): [string, string][] {
  const rows: [string, string][] = [];
  if (d.agent) rows.push(['agent', `${d.agent.preset}${d.agent.agentSessionId ? ` (conversation ${d.agent.agentSessionId})` : ''}`]);
  if (d.usage) rows.push(['tokens', `${d.usage.inputTokens} in · ${d.usage.outputTokens} out`]);
  const ws = d.workspace;
  if (ws) {
    rows.push(['branch', `${ws.branch} ${ws.baseCommit.slice(0, 7)}..${ws.headCommit.slice(0, 7)}: ${ws.commits.length} commit(s), `
      + `${ws.filesChanged} file(s) +${ws.insertions} −${ws.deletions}${ws.dirty ? ', uncommitted changes left' : ''}`]);
    rows.push(['push', ws.pushed ? 'pushed' : ws.pushError ? `refused: ${ws.pushError}` : 'nothing to push']);
  }
  if (d.pullRequest) rows.push(['pull request', `#${d.pullRequest.number} ${d.pullRequest.url}`]);
  else if (d.pullRequestDelivery) rows.push(['pull request', `${d.pullRequestDelivery.status}${d.pullRequestDelivery.lastError ? `: ${d.pullRequestDelivery.lastError}` : ''}`]);
  return rows;
}

export function renderDetail(d: SessionDetail): string {
  const rows: [string, string][] = [
    ['session', d.id],
    ['status', `${d.status}${d.phase ? ` (${d.phase})` : ''} · run ${d.run}${d.waitingForIssueLock ? ' · waiting for its issue lock' : ''}`],
    ['project', d.project.name ? `${d.project.name} (${d.project.id})` : d.project.id],
    ['worker', d.worker ? `${d.worker.hostname ?? '?'} (${d.worker.id})${d.worker.holdsClaim ? '' : ', released'}` : '-'],
    ['provider', d.provider ?? '-'],
    ['work type', d.workType ?? '-'],
    ['issue', d.trackerIssue ?? '-'],
    ['repository', d.repository ? `${d.repository.name} (${d.repository.url}) at ${d.ref ?? d.repository.defaultBranch}` : '-'],
    ['cost', money(d.costUsd)],
    ['created', d.createdAt ?? '-'],
    ['finished', d.finishedAt ?? '-'],
    ...runRows(d),
  ];
  if (d.error) rows.push(['error', d.error]);
  const width = Math.max(...rows.map(([k]) => k.length));
  const out = rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`);
  out.push('', 'prompt', indent(d.prompt));
  if (d.prompts.length > 0) {
    out.push('', 'prompts sent');
    for (const p of d.prompts) out.push(`  ${p.createdAt ?? '-'}  ${p.queued ? 'queued   ' : 'delivered'}  ${oneLine(p.text)}`);
  }
  out.push('', 'timeline');
  for (const t of d.timeline) out.push(`  ${t.at}  ${t.from} → ${t.status}${t.workerId ? `  (worker ${t.workerId})` : ''}`);
  if (d.output) {
    out.push('', `output (${d.output.truncated ? `last ${Buffer.byteLength(d.output.tail)} of ${d.output.totalBytes} bytes` : `${d.output.totalBytes} bytes`})`);
    out.push(indent(d.output.tail.replace(/\n$/, '')));
  }
  return `${out.join('\n')}\n`;
}

const indent = (text: string): string => text.split('\n').map((l) => `  ${l}`).join('\n');
const oneLine = (text: string): string => (text.length > 100 ? `${text.slice(0, 99)}…` : text).replace(/\s+/g, ' ');
