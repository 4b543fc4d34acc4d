import { useMemo, useRef, useState, useEffect } from 'preact/hooks';
import { post, type ApiError } from '../../api.js';
import type { Applied, ApplyRequest, BuilderTurn, BuilderTurnRequest, Synthesized, SynthesizeRequest } from '../../api-types.js';
import { asApiError } from '../../data.js';
import { useMe } from '../../me.js';
import { useLocation } from '../../router.js';
import { ErrorNote, PageHeader } from '../../ui/bits.js';
import { readDefinition } from '../workflow-editor/definition-graph.js';
import { yamlOfPlan } from '../workflow-editor/plan-definition.js';
import { WorkflowCanvas } from '../workflow-editor/workflow-canvas.js';
import { YamlEditor } from '../workflow-editor/yaml-editor.js';
import { RoundForm, WORKFLOW_ROUNDS, type WorkflowRound } from './round-forms.js';

type Candidate = Synthesized & { status: 'candidate' };

/**
 * The builder conversation as a guided form (spec 1.3, decision 0011): a goal, the three clarification rounds the
 * server asks one after another (it signs the state the page carries between them), the draft it synthesizes shown as
 * a graph and as YAML, then "store as proposal" (authoring apply, which changes no workflow) and a link that opens the
 * proposal in the workflow editor. `?project=` picks the project, `?workflow=` drafts against an existing workflow.
 */
export function BuilderPage() {
  const me = useMe();
  const { query } = useLocation();
  const workflowId = query.get('workflow') ?? '';
  const [projectId, setProjectId] = useState(query.get('project') ?? me.projects[0]?.id ?? '');
  const [goal, setGoal] = useState('');
  const [turn, setTurn] = useState<BuilderTurn | undefined>(undefined);
  const [synthesized, setSynthesized] = useState<Synthesized | undefined>(undefined);
  const [applied, setApplied] = useState<Applied | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const base = `/api/projects/${encodeURIComponent(projectId)}/authoring`;

  const call = async <T,>(path: string, body: unknown, then: (reply: T) => void) => {
    setError(undefined);
    setBusy(true);
    try {
      then(await post<T>(path, body));
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };

  const start = () => call<BuilderTurn>(`${base}/conversation`, { action: 'start', goal: goal.trim(), target: 'workflow', ...(workflowId ? { workflowId } : {}) } satisfies BuilderTurnRequest, setTurn);
  const answer = (answer: Record<string, unknown>) => {
    if (!turn) return;
    void call<BuilderTurn>(`${base}/conversation`, { action: 'answer', state: turn.state, answer, conversation: turn.conversation } satisfies BuilderTurnRequest, (next) => {
      setTurn(next);
      // After the third answer the request is complete: draft it at once, the person's next look is at the draft.
      if (next.status === 'ready' && next.synthesisRequest) {
        void call<Synthesized>(`${base}/synthesize`, { synthesisRequest: next.synthesisRequest } satisfies SynthesizeRequest, setSynthesized);
      }
    });
  };
  const restart = () => { setTurn(undefined); setSynthesized(undefined); setApplied(undefined); setError(undefined); };

  const round = turn?.status === 'question' ? (turn.state.nextRound as WorkflowRound) : undefined;
  return (
    <article aria-labelledby="page-title" class="builder-page">
      <PageHeader title="Workflow builder">
        <a class="button-link button-quiet" href="/workflows/new">Write the YAML instead</a>
      </PageHeader>
      <p class="muted">Answer three questions and the builder drafts a workflow from this project's node kinds. The draft is stored as a proposal; no workflow changes until you save it in the editor.</p>
      {workflowId ? <p class="note">Drafting a new version of an existing workflow: the proposal opens in its editor, where saving makes the version.</p> : null}
      <ErrorNote error={error} title="Refused" />

      <form class="card builder-goal" onSubmit={(e) => { e.preventDefault(); void start(); }}>
        <label class="stack">Project
          <select value={projectId} disabled={turn !== undefined || workflowId !== ''} onChange={(e) => setProjectId(e.currentTarget.value)}>
            {me.projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </label>
        <label class="stack">Goal: what should this workflow do?
          <textarea rows={2} maxLength={2000} required value={goal} readOnly={turn !== undefined} onInput={(e) => setGoal(e.currentTarget.value)} />
        </label>
        {turn === undefined
          ? <button type="submit" disabled={busy || goal.trim() === '' || projectId === ''}>Start</button>
          : <button type="button" class="button-quiet" onClick={restart}>Start over</button>}
      </form>

      {turn && turn.state.turns.length > 0 ? <Answers turns={turn.state.turns} /> : null}
      {round && WORKFLOW_ROUNDS.includes(round) ? <RoundForm key={round} round={round} prompt={turn?.query?.prompt ?? ''} busy={busy} onAnswer={answer} /> : null}
      {turn?.status === 'ready' && !synthesized ? <p class="muted" role="status">Drafting…</p> : null}
      {synthesized?.status === 'question' ? <Questions synthesized={synthesized} onRestart={restart} /> : null}
      {synthesized?.status === 'candidate' && synthesized.candidate?.plan ? (
        <Draft candidate={synthesized as Candidate} projectId={projectId} workflowId={workflowId} busy={busy} applied={applied} mayStore={me.role !== 'viewer'}
          onApply={(body) => call<Applied>(`${base}/apply`, body, setApplied)} />
      ) : null}
    </article>
  );
}

function Answers({ turns }: { turns: BuilderTurn['state']['turns'] }) {
  return (
    <section aria-labelledby="answers-title" class="card">
      <h2 id="answers-title">Your answers</h2>
      <ol class="builder-answers">
        {turns.map((t) => (
          <li key={t.round} data-answered={t.round}><span class="muted">{t.prompt}</span><br />{describeAnswer(t.answer)}</li>
        ))}
      </ol>
    </section>
  );
}

function describeAnswer(answer: Record<string, unknown>): string {
  if (typeof answer.outcome === 'string') return answer.outcome;
  if (Array.isArray(answer.steps)) return answer.steps.map((s, i) => `${i + 1}. ${String(s)}`).join('  ');
  if (typeof answer.approval === 'boolean') {
    const who = typeof answer.approverRole === 'string' ? ` (${answer.approverRole} or above)` : '';
    const wait = typeof answer.waitSeconds === 'number' ? `, then wait ${answer.waitSeconds} s` : '';
    return `${answer.approval ? `A person approves before the last step${who}` : 'No approval'}${wait}.`;
  }
  return JSON.stringify(answer);
}

function Questions({ synthesized, onRestart }: { synthesized: Synthesized; onRestart: () => void }) {
  return (
    <section aria-labelledby="questions-title" class="card" role="alert">
      <h2 id="questions-title">The builder needs more before it can draft</h2>
      <ul>{(synthesized.questions ?? []).map((q, i) => <li key={i}>{q.question}</li>)}</ul>
      <button type="button" onClick={onRestart}>Start over</button>
    </section>
  );
}

/** The synthesized draft as a graph and as YAML, stored as a proposal on request, then opened in the editor. */
function Draft({ candidate, projectId, workflowId, busy, applied, mayStore, onApply }: {
  candidate: Candidate; projectId: string; workflowId: string; busy: boolean; applied: Applied | undefined; mayStore: boolean;
  onApply: (body: ApplyRequest) => Promise<void>;
}) {
  const plan = candidate.candidate!.plan!;
  const yamlText = useMemo(() => yamlOfPlan(plan), [plan]);
  const graph = useMemo(() => readDefinition(yamlText).graph ?? { nodes: [], edges: [] }, [yamlText]);
  const heading = useRef<HTMLHeadingElement>(null);
  const open = useRef<HTMLAnchorElement>(null);
  // The draft takes the focus when it arrives, and the link to the editor once it is stored (the button it replaces is gone).
  useEffect(() => { heading.current?.focus(); }, []);
  useEffect(() => { if (applied) open.current?.focus(); }, [applied]);
  const digests = candidate.digests!;
  const editorLink = `/workflows/new?project=${encodeURIComponent(projectId)}&proposal=${encodeURIComponent(applied?.proposalId ?? '')}`;
  return (
    <section aria-labelledby="draft-title" class="builder-draft" data-draft="">
      <h2 id="draft-title" tabIndex={-1} ref={heading}>Draft: {plan.name}</h2>
      {plan.description ? <p>{plan.description}</p> : null}
      <div class="workbench">
        <div class="workbench-canvas"><WorkflowCanvas nodes={graph.nodes} edges={graph.edges} title="The draft as a graph" /></div>
        <div class="workbench-yaml"><h3>The draft as YAML</h3><YamlEditor value={yamlText} label="Draft definition YAML (read only)" readOnly /></div>
      </div>
      {applied ? (
        <p class="note" role="status" data-proposal={applied.proposalId}>
          Stored as proposal <code>{applied.proposalId.slice(0, 8)}</code>, version {applied.version}. No workflow changed.{' '}
          <a href={editorLink} ref={open}>Open the proposal in the editor</a>
        </p>
      ) : !mayStore ? <p class="muted">Your role may draft but not store proposals.</p> : (
        <div class="buttons">
          <button type="button" disabled={busy} onClick={() => onApply({
            target: 'workflow', ...(workflowId ? { workflowId } : {}), plan,
            candidateDigest: digests.candidateDigest, baseDigest: digests.baseDigest, vocabularyDigest: digests.vocabularyDigest, policyDigest: digests.policyDigest,
          })}>Store as proposal</button>
        </div>
      )}
    </section>
  );
}
