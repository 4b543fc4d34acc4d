import { useState } from 'preact/hooks';
import { api } from '../../api.js';
import { useApi } from '../../data.js';
import { useMe } from '../../me.js';
import { Empty, ErrorNote, Loading, money, PageHeader } from '../../ui/bits.js';
import { administers, Section, SettingsTabs, useAction } from './parts.js';
import type { BudgetChange, ProjectBudget } from './types.js';

/**
 * Each project's budgets and what it spent this UTC month against them: at the monthly budget, dispatch is refused;
 * past the per-session one, a running session is stopped. Setting them is the org's admins' and owners' call.
 */
export function BudgetsPage() {
  const me = useMe();
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Budgets" />
      <SettingsTabs current="budgets" />
      <p class="muted">Agent spend as workers report it, in US dollars, per UTC month.</p>
      {me.projects.length === 0 ? <Empty title="You see no project." /> : me.projects.map((p) => <ProjectBudgetCard key={p.id} projectId={p.id} name={p.name} />)}
    </section>
  );
}

/** '' is "no budget" (null to the API); anything else must be a non-negative amount. */
const parseAmount = (text: string): number | null | undefined => {
  if (text.trim() === '') return null;
  const n = Number(text);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
};
const shown = (usd: number | null) => (usd === null ? '' : String(usd));

function ProjectBudgetCard({ projectId, name }: { projectId: string; name: string }) {
  const me = useMe();
  const path = `/api/projects/${encodeURIComponent(projectId)}/budget`;
  const budget = useApi<ProjectBudget>(path);
  const b = budget.data;
  const key = projectId.slice(0, 8);
  return (
    <Section id={`budget-${key}`} title={name}>
      <ErrorNote error={budget.error} title="The budget could not be read" />
      {!b ? (budget.error ? null : <Loading what="the budget" />) : (
        <>
          <dl class="facts">
            <dt>Spent this month</dt>
            <dd data-spent>{money(b.spentThisMonthUsd)}{b.monthlyUsd !== null ? <> of {money(b.monthlyUsd)}</> : null}</dd>
            <dt>Monthly budget</dt><dd>{b.monthlyUsd === null ? 'none' : money(b.monthlyUsd)}</dd>
            <dt>Per session</dt><dd>{b.perSessionUsd === null ? 'none' : money(b.perSessionUsd)}</dd>
          </dl>
          {b.monthlyUsd !== null ? (
            <>
              <label for={`spend-${key}`} class="small muted">Share of the monthly budget spent</label>
              <meter class="budget-meter" id={`spend-${key}`} min={0} max={b.monthlyUsd || 1} value={Math.min(b.spentThisMonthUsd, b.monthlyUsd || 1)} high={(b.monthlyUsd || 1) * 0.8} optimum={0}>
                {money(b.spentThisMonthUsd)} of {money(b.monthlyUsd)}
              </meter>
              {b.spentThisMonthUsd >= b.monthlyUsd ? <p class="note note-error" role="alert">The monthly budget is spent: new sessions in {name} are refused until it is raised or the month ends.</p> : null}
            </>
          ) : null}
          {administers(me) ? <BudgetForm path={path} keyId={key} budget={b} onSaved={budget.reload} /> : null}
        </>
      )}
    </Section>
  );
}

function BudgetForm({ path, keyId, budget, onSaved }: { path: string; keyId: string; budget: ProjectBudget; onSaved: () => void }) {
  const [monthly, setMonthly] = useState(shown(budget.monthlyUsd));
  const [perSession, setPerSession] = useState(shown(budget.perSessionUsd));
  const [saved, setSaved] = useState(false);
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    setSaved(false);
    const monthlyUsd = parseAmount(monthly);
    const perSessionUsd = parseAmount(perSession);
    void action.run(async () => {
      if (monthlyUsd === undefined || perSessionUsd === undefined) throw new Error('A budget is an amount in US dollars, 0 or more, or empty for none.');
      await api<ProjectBudget>('PUT', path, { monthlyUsd, perSessionUsd } satisfies BudgetChange);
      setSaved(true);
      onSaved();
    });
  };
  return (
    <form class="inline-form" onSubmit={submit}>
      <label for={`monthly-${keyId}`}>Monthly budget (USD)</label>
      <input id={`monthly-${keyId}`} type="number" min={0} step="0.01" inputMode="decimal" placeholder="none" value={monthly} onInput={(e) => setMonthly((e.target as HTMLInputElement).value)} />
      <label for={`session-${keyId}`}>Per-session budget (USD)</label>
      <input id={`session-${keyId}`} type="number" min={0} step="0.01" inputMode="decimal" placeholder="none" value={perSession} onInput={(e) => setPerSession((e.target as HTMLInputElement).value)} />
      <button type="submit" disabled={action.busy}>Save budget</button>
      {saved ? <span role="status" class="muted small">Saved.</span> : null}
      <ErrorNote error={action.error} title="Not saved" />
    </form>
  );
}
