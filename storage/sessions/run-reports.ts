import type { Knex } from 'knex';

/**
 * What a worker reports about a session run beyond its status (issue 34, migration 0049, decision 0076): the agent
 * that ran it, the tokens and cost it used, and the workspace it left. Kept per run (`epoch`) outside the session
 * actor's state; each member is the latest reported, a report without it keeps the one before.
 */
export interface AgentReport { readonly preset: string; readonly agentSessionId?: string }
export interface UsageReport { readonly inputTokens: number; readonly outputTokens: number; readonly costUsd?: number }
export interface WorkspaceReport {
  readonly repository: string;
  readonly branch: string;
  readonly baseCommit: string;
  readonly headCommit: string;
  /** Newest first. */
  readonly commits: readonly { readonly sha: string; readonly subject: string }[];
  readonly filesChanged: number;
  readonly insertions: number;
  readonly deletions: number;
  readonly dirty: boolean;
  readonly pushed: boolean;
  readonly pushError?: string;
}

export interface RunReport {
  readonly agent?: AgentReport;
  readonly usage?: UsageReport;
  readonly workspace?: WorkspaceReport;
}

const json = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));
/** jsonb comes back parsed from pg and PGlite alike; a string is tolerated in case a driver hands back text. */
const parsed = <T>(v: unknown): T | null => (v === null || v === undefined ? null : (typeof v === 'string' ? JSON.parse(v) : v) as T);

/**
 * Records `report` for the run of the session (key `sessionKey`) that `workerId` holds or, once it ended, last held.
 * Returns the run's epoch, or undefined when the session has since gone back to the queue or to another worker (the
 * report is about a run that is no longer the session's).
 */
export async function recordRunReport(
  db: Knex, orgId: string, sessionKey: string, workerId: string, report: RunReport, at: Date,
): Promise<number | undefined> {
  const result = await db.raw(
    `insert into session_run_reports (session_id, org_id, epoch, agent, usage, workspace, updated_at)
     select s.id, s.org_id, s.epoch, ?::jsonb, ?::jsonb, ?::jsonb, ?
       from sessions s
      where s.id = ? and s.org_id = ? and s.status <> 'pending' and coalesce(s.worker_id, s.last_worker_id) = ?
     on conflict (session_id, epoch) do update set
       agent = coalesce(excluded.agent, session_run_reports.agent),
       usage = coalesce(excluded.usage, session_run_reports.usage),
       workspace = coalesce(excluded.workspace, session_run_reports.workspace),
       updated_at = excluded.updated_at
     returning epoch`,
    [json(report.agent), json(report.usage), json(report.workspace), at, sessionKey, orgId, workerId],
  );
  const row = (result.rows as { epoch: number }[])[0];
  return row === undefined ? undefined : Number(row.epoch);
}

/** The run's report as the session detail shows it: each member null until reported. */
export interface RunReportView {
  readonly agent: { preset: string; agentSessionId: string | null } | null;
  readonly usage: { inputTokens: number; outputTokens: number; costUsd: number | null } | null;
  readonly workspace: WorkspaceReport | null;
}

export async function runReportOf(db: Knex, orgId: string, sessionKey: string, epoch: number): Promise<RunReportView> {
  const row = await db('session_run_reports').where({ session_id: sessionKey, org_id: orgId, epoch }).first('agent', 'usage', 'workspace');
  const agent = parsed<AgentReport>(row?.agent);
  const usage = parsed<UsageReport>(row?.usage);
  return {
    agent: agent === null ? null : { preset: agent.preset, agentSessionId: agent.agentSessionId ?? null },
    usage: usage === null ? null : { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, costUsd: usage.costUsd ?? null },
    workspace: parsed<WorkspaceReport>(row?.workspace),
  };
}

/** The workspace the run left, for the pull request it may owe. */
export async function workspaceOfRun(db: Knex, orgId: string, sessionKey: string, epoch: number): Promise<WorkspaceReport | null> {
  return (await runReportOf(db, orgId, sessionKey, epoch)).workspace;
}

/**
 * The agent's own conversation id from the latest run of the session that reported one, so a follow-up run can
 * resume that conversation (issue 34, 3). Undefined when no run reported one, or the session is another org's.
 */
export async function agentSessionIdOf(db: Knex, orgId: string, sessionKey: string): Promise<string | undefined> {
  const row = await db('session_run_reports')
    .where({ session_id: sessionKey, org_id: orgId })
    .whereRaw(`agent->>'agentSessionId' is not null`)
    .orderBy('epoch', 'desc')
    .first(db.raw(`agent->>'agentSessionId' as agent_session_id`));
  return row ? String(row.agent_session_id) : undefined;
}
