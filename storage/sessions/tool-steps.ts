import type { Knex } from 'knex';

/**
 * An agent's tool steps, as its worker reports them (`POST /api/sessions/{id}/steps`, issue 34): each one a session
 * activity of kind `tool`, listed in the session detail with the others. Activities are append-only rows outside the
 * session actor's state (as a provider's note is, actors/services/integrations/webhooks/actor.ts), so they are written here
 * without a round trip through the actor, in one statement that checks the worker still holds the session.
 */
export interface ToolStepRow {
  /** Repeatable by the worker: a retried request writes nothing twice. Unique within the session's run. */
  readonly key: string;
  readonly body: string;
  /** When the worker saw the step; kept between the run's claim and now, whatever the worker's clock says. */
  readonly at: Date;
}

/**
 * Appends the steps to the current run of the session (key `sessionKey`) if `workerId` holds it. `held: false`
 * writes nothing; `inserted` counts the steps that were new, `newKeys` names them (their transcript entries are
 * written for these only, so a retried request adds none twice).
 */
export async function appendToolSteps(
  db: Knex, orgId: string, sessionKey: string, workerId: string, steps: readonly ToolStepRow[], now: Date,
): Promise<{ held: boolean; inserted: number; newKeys: ReadonlySet<string> }> {
  const result = await db.raw(
    `with s as (
       select id, org_id, epoch, claimed_at from sessions
        where id = ? and org_id = ? and worker_id = ? and status in ('claimed', 'running', 'paused', 'finalizing')
     ), ins as (
       insert into session_activities (id, session_id, org_id, kind, body, created_at)
       select s.id || ':' || s.epoch || ':tool:' || v.step_key, s.id, s.org_id, 'tool', v.body,
              greatest(least(v.at, ?::timestamptz), coalesce(s.claimed_at, ?::timestamptz))
         from s cross join unnest(?::text[], ?::text[], ?::timestamptz[]) as v(step_key, body, at)
       on conflict (id) do nothing
       returning id
     )
     select (select count(*) from s)::int as held, (select count(*) from ins)::int as inserted,
            coalesce((select array_agg(id) from ins), '{}') as ids`,
    [
      sessionKey, orgId, workerId, now, now,
      steps.map((s) => s.key), steps.map((s) => s.body), steps.map((s) => s.at.toISOString()),
    ],
  );
  const row = (result.rows as { held: number; inserted: number; ids: string[] }[])[0]!;
  // Ids are `<session>:<epoch>:tool:<step key>`; the step key is what the caller knows its steps by.
  const newKeys = new Set(row.ids.map((id) => id.split(':tool:').slice(1).join(':tool:')));
  return { held: Number(row.held) > 0, inserted: Number(row.inserted), newKeys };
}
