import { useState } from 'preact/hooks';
import { post, type ApiError } from '../api.js';
import type { AgentRequest, ApprovalGate, ApprovalGateList, GateDecisionRequest } from '../api-types.js';
import { asApiError, useApi, useInterval } from '../data.js';
import { projectName, useMe } from '../me.js';
import { Empty, ErrorNote, Loading, PageHeader, Status, Time } from '../ui/bits.js';
import { PushOptIn } from '../ui/push-opt-in.js';
import { visibleText } from '../../../routes/agent-text.js';

/**
 * The approvals inbox: gates waiting on me (my role meets the gate's), then every gate of the org. Deciding shows
 * the server's answer; a run that was waiting continues, which the run line shows as it refreshes.
 */
export function Approvals() {
  const [showAll, setShowAll] = useState(false);
  const [decided, setDecided] = useState<string[]>([]);
  const mine = useApi<ApprovalGateList>('/api/approval-gates?for=me');
  const all = useApi<ApprovalGateList>(showAll || decided.length > 0 ? '/api/approval-gates' : undefined);
  const refresh = () => { mine.reload(); if (showAll || decided.length > 0) all.reload(); };
  // Gates and runs have no event stream of their own: while someone watches a decision play out, read often.
  useInterval(refresh, decided.length > 0 ? 1500 : 4000);
  const onDecided = (id: string) => { setDecided((ids) => [id, ...ids.filter((x) => x !== id)]); refresh(); };
  const recent = decided.flatMap((id) => all.data?.gates.find((g) => g.id === id) ?? []);
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Approvals" />
      <PushOptIn />
      {recent.length > 0 ? (
        <section aria-labelledby="recent-title">
          <h2 id="recent-title">Decided just now</h2>
          <ul class="cards">{recent.map((g) => <GateCard key={g.id} gate={g} onDecided={onDecided} />)}</ul>
        </section>
      ) : null}
      <h2>Waiting on me</h2>
      <ErrorNote error={mine.error} title="The inbox could not be read" />
      {!mine.data ? (mine.error ? null : <Loading what="gates" />) : mine.data.gates.length === 0 ? (
        <Empty title="Nothing is waiting on you.">
          <p>Gates open when a workflow run reaches an approval step, or with <code>POST /api/approval-gates</code>. Turn on notifications above to hear about new ones.</p>
        </Empty>
      ) : (
        <ul class="cards">{mine.data.gates.map((g) => <GateCard key={g.id} gate={g} onDecided={onDecided} />)}</ul>
      )}
      <h2>All gates</h2>
      {!showAll ? <button type="button" class="button-quiet" onClick={() => setShowAll(true)}>Show every gate of the org</button> : (
        <>
          <ErrorNote error={all.error} />
          {all.data ? (all.data.gates.length === 0 ? <Empty title="The org has no gates yet." /> : (
            <ul class="cards">{[...all.data.gates].reverse().map((g) => <GateCard key={g.id} gate={g} onDecided={onDecided} />)}</ul>
          )) : all.error ? null : <Loading what="gates" />}
        </>
      )}
    </section>
  );
}

export function GateCard({ gate, onDecided }: { gate: ApprovalGate; onDecided: (id: string) => void }) {
  const me = useMe();
  const [comment, setComment] = useState('');
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const decide = async (decision: 'approved' | 'rejected' | 'escalated') => {
    setBusy(true);
    setError(undefined);
    try {
      await post(`/api/approval-gates/${gate.id}/decide`, { decision, ...(comment.trim() ? { comment: comment.trim() } : {}) } satisfies GateDecisionRequest);
      onDecided(gate.id);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  const field = `comment-${gate.id}`;
  const decider = deciderRole(gate.decidedBy);
  return (
    <li class="card gate" data-gate={gate.id} aria-labelledby={`gate-${gate.id}`}>
      <div class="gate-head">
        <h3 id={`gate-${gate.id}`}>{gate.title}</h3>
        <Status value={gate.status} />
      </div>
      <p class="muted small">
        Opened <Time at={gate.createdAt} /> in {projectName(me, gate.projectId)}
        {gate.requiredRole ? <> · needs <strong>{gate.requiredRole}</strong></> : null}
        {gate.issue ? <> · issue {gate.issue}</> : null}
        {gate.sessionId ? <> · <a href={`/sessions/${gate.sessionId}`}>session</a></> : null}
      </p>
      {gate.run ? <GateRun run={gate.run} /> : null}
      {/* A gate on a session without a workflow run is one its agent opened (decision 0088): show all it asked. */}
      {gate.sessionId && !gate.run ? <AgentAsked gateId={gate.id} /> : null}
      {gate.status !== 'pending' ? (
        <p class="small">Decided <Time at={gate.decidedAt} />{decider ? ` by a ${decider}` : ''}{gate.comment ? `: “${gate.comment}”` : ''}</p>
      ) : gate.mayDecide ? (
        <div class="stack">
          <label for={field}>Comment (optional)</label>
          <textarea id={field} rows={2} value={comment} onInput={(e) => setComment((e.target as HTMLTextAreaElement).value)} />
          <div class="buttons">
            <button type="button" disabled={busy} onClick={() => decide('approved')}>Approve</button>
            <button type="button" class="button-danger" disabled={busy} onClick={() => decide('rejected')}>Reject</button>
            <button type="button" class="button-quiet" disabled={busy} onClick={() => decide('escalated')}>Escalate</button>
          </div>
        </div>
      ) : <p class="muted small">Your role cannot decide this gate.</p>}
      <ErrorNote error={error} title="Not decided" />
    </li>
  );
}

/** The API documents every member of a gate's run as optional: a missing one is left out rather than shown as "undefined". */
function GateRun({ run }: { run: NonNullable<ApprovalGate['run']> }) {
  const name = run.workflowName ?? 'a workflow';
  return (
    <p class="small" data-run-status={run.status}>
      Run of {run.workflowId ? <a href={`/workflows/${run.workflowId}`}>{name}</a> : name}, version {run.version}: {run.status ? <Status value={run.status} /> : null}
    </p>
  );
}

/** The API documents `decidedBy` as any value; the gate records its decider as `{ userId, role }`. */
function deciderRole(decidedBy: unknown): string | undefined {
  return typeof decidedBy === 'object' && decidedBy !== null && 'role' in decidedBy && typeof decidedBy.role === 'string' ? decidedBy.role : undefined;
}

/**
 * What the session's agent asked, whole: the title is cut for the list, and an approver must see every character of
 * what they allow (the server has made hidden characters visible; http/routes/agent-text.ts).
 */
function AgentAsked({ gateId }: { gateId: string }) {
  const asked = useApi<AgentRequest>(`/api/approval-gates/${gateId}/agent-request`);
  if (!asked.data) return null;
  const { kind, summary, details, tool } = asked.data;
  return (
    <div class="agent-request" data-agent-request={kind}>
      {kind === 'tool' && tool ? (
        <>
          <p class="small">The agent asks to run <strong>{tool.name}</strong> with this input:</p>
          <pre class="output" tabIndex={0}>{visibleText(JSON.stringify(tool.input, null, 2))}</pre>
        </>
      ) : (
        <>
          <p class="small">The agent asks: <strong>{summary}</strong></p>
          {details ? <pre class="output" tabIndex={0}>{details}</pre> : null}
        </>
      )}
    </div>
  );
}
