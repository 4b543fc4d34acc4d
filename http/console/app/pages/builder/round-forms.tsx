import type { JSX, RefObject } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

/**
 * One form per clarification round of a workflow draft (actors/kinds/authoring/rounds.ts): the outcome in words,
 * the steps one per line, the guardrails as an approval, its approver and a wait. Each builds the answer object the
 * round's answer schema takes; the server checks it again and says what is wrong when it is not.
 */
export type WorkflowRound = 'outcome' | 'steps' | 'guardrails';
export const WORKFLOW_ROUNDS: readonly WorkflowRound[] = ['outcome', 'steps', 'guardrails'];

export function RoundForm({ round, prompt, busy, onAnswer }: {
  round: WorkflowRound; prompt: string; busy: boolean; onAnswer: (answer: Record<string, unknown>) => void;
}) {
  const first = useRef<HTMLTextAreaElement & HTMLInputElement>(null);
  // Each new round takes the focus, so a keyboard or screen-reader user is where the next question is.
  useEffect(() => { first.current?.focus(); }, [round]);
  const index = WORKFLOW_ROUNDS.indexOf(round) + 1;
  const legend = <legend>Round {index} of 3: {prompt}</legend>;
  if (round === 'outcome') return <OutcomeForm legend={legend} busy={busy} onAnswer={onAnswer} first={first} />;
  if (round === 'steps') return <StepsForm legend={legend} busy={busy} onAnswer={onAnswer} first={first} />;
  return <GuardrailsForm legend={legend} busy={busy} onAnswer={onAnswer} first={first} />;
}

interface FormProps {
  legend: JSX.Element; busy: boolean; onAnswer: (answer: Record<string, unknown>) => void;
  first: RefObject<HTMLTextAreaElement & HTMLInputElement>;
}

function OutcomeForm({ legend, busy, onAnswer, first }: FormProps) {
  const [outcome, setOutcome] = useState('');
  return (
    <form class="card builder-round" data-round="outcome" onSubmit={(e) => { e.preventDefault(); onAnswer({ outcome: outcome.trim() }); }}>
      <fieldset>
        {legend}
        <label class="stack">Outcome
          <textarea ref={first} rows={3} maxLength={2000} required value={outcome} onInput={(e) => setOutcome(e.currentTarget.value)} />
        </label>
      </fieldset>
      <button type="submit" disabled={busy || outcome.trim() === ''}>Next</button>
    </form>
  );
}

function StepsForm({ legend, busy, onAnswer, first }: FormProps) {
  const [text, setText] = useState('');
  const steps = text.split('\n').map((s) => s.trim()).filter((s) => s !== '');
  return (
    <form class="card builder-round" data-round="steps" onSubmit={(e) => { e.preventDefault(); onAnswer({ steps }); }}>
      <fieldset>
        {legend}
        <label class="stack">Steps, one per line
          <textarea ref={first} rows={5} required value={text} aria-describedby="steps-help" onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        <p class="muted small" id="steps-help">Each line becomes an agent step, in order (at most 20). A line starting with <code>plugin:&lt;plugin&gt;.&lt;verb&gt;</code> runs that plugin verb.</p>
      </fieldset>
      <button type="submit" disabled={busy || steps.length === 0 || steps.length > 20}>Next</button>
    </form>
  );
}

function GuardrailsForm({ legend, busy, onAnswer, first }: FormProps) {
  const [approval, setApproval] = useState(true);
  const [role, setRole] = useState<'' | 'owner' | 'admin' | 'member'>('');
  const [wait, setWait] = useState('0');
  const waitSeconds = Number(wait);
  const waitOk = /^\d+$/.test(wait) && waitSeconds <= 7 * 24 * 3600;
  const answer = () => ({ approval, ...(approval && role ? { approverRole: role } : {}), ...(waitSeconds > 0 ? { waitSeconds } : {}) });
  return (
    <form class="card builder-round" data-round="guardrails" onSubmit={(e) => { e.preventDefault(); onAnswer(answer()); }}>
      <fieldset>
        {legend}
        <label class="check"><input ref={first} type="checkbox" checked={approval} onChange={(e) => setApproval(e.currentTarget.checked)} /> A person approves before the last step</label>
        <label class="stack">Who may approve
          <select value={role} disabled={!approval} onChange={(e) => setRole(e.currentTarget.value as typeof role)}>
            <option value="">Anyone in the project</option>
            <option value="member">A member or above</option>
            <option value="admin">An admin or owner</option>
            <option value="owner">An owner</option>
          </select>
        </label>
        <label class="stack">Wait before continuing (seconds, 0 for none)
          <input type="number" min={0} max={7 * 24 * 3600} inputMode="numeric" value={wait} onInput={(e) => setWait(e.currentTarget.value)} />
        </label>
      </fieldset>
      <button type="submit" disabled={busy || !waitOk}>Finish and draft</button>
    </form>
  );
}
