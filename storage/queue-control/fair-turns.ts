import type { Knex } from 'knex';
import type { AuditIn } from './pauses.js';

/**
 * Where each project stands in its org's offer rounds (migration 0055, decision 0085). A round gives every project with
 * pending work a turn of `weight` offers (1 with no row); projects are served least recently turned first. A poll
 * reads the turns of the projects it considers and, after it has chosen, moves on those it offered something.
 */

type Row = Record<string, unknown>;

export const DEFAULT_WEIGHT = 1;
export const MAX_WEIGHT = 100;

/** A project's place in the rounds, as the poll reads it with its candidates. */
export interface Turn {
  readonly weight: number;
  /** Offers its current turn has used, below `weight`. */
  readonly used: number;
  /** When it last finished a turn (ms), or null: never, so it is first in line. */
  readonly turnAt: number | null;
}

/**
 * The turn after `offered` more offers at `now`: a turn that fills (or overflows) ends at `now`, which sends the project
 * to the back of the line; one still short keeps its place, so the next poll serves it first again.
 */
export function advanced(turn: Turn, offered: number, now: number): Turn {
  const total = turn.used + offered;
  if (total < turn.weight) return { ...turn, used: total };
  return { weight: turn.weight, used: total % turn.weight, turnAt: now };
}

/** Records the turns of the projects a poll offered sessions to (project id → offers made). */
export async function recordTurns(
  db: Knex, orgId: string, turns: ReadonlyMap<string, { before: Turn; offered: number }>, now: number,
): Promise<void> {
  if (turns.size === 0) return;
  const rows = [...turns].map(([projectId, { before, offered }]) => {
    const after = advanced(before, offered, now);
    return { project_id: projectId, org_id: orgId, weight: before.weight, turn_at: after.turnAt === null ? null : new Date(after.turnAt), turn_used: after.used };
  });
  // Two polls racing over one project each move it on from what they read; the later write wins. Each still offered
  // what it read, so the worst is a project served one more time in a round: no lock on the poll for that.
  await db('project_queue_turns').insert(rows).onConflict('project_id')
    // The weight is not the poll's to write: a change of it between the read and this write stands, and a turn count
    // past a lowered weight starts a fresh turn.
    .merge({
      turn_at: db.raw('excluded.turn_at'),
      turn_used: db.raw('case when excluded.turn_used < project_queue_turns.weight then excluded.turn_used else 0 end'),
    });
}

/** A project's weight in its org's offer rounds (1 with no setting). */
export async function projectWeight(db: Knex, orgId: string, projectId: string): Promise<number> {
  const row = await db('project_queue_turns').where({ org_id: orgId, project_id: projectId }).first('weight') as Row | undefined;
  return row === undefined ? DEFAULT_WEIGHT : Number(row.weight);
}

/** Sets a project's weight; audits it only when it changed. The caller has checked the project is the org's. */
export async function setProjectWeight(
  db: Knex, orgId: string, projectId: string, weight: number, by: string, at: Date, audit: (before: number) => AuditIn,
): Promise<{ changed: boolean; before: number }> {
  return db.transaction(async (trx) => {
    const row = await trx('project_queue_turns').where({ org_id: orgId, project_id: projectId }).forUpdate().first('weight') as Row | undefined;
    const before = row === undefined ? DEFAULT_WEIGHT : Number(row.weight);
    if (before === weight) return { changed: false, before };
    await trx('project_queue_turns')
      .insert({ project_id: projectId, org_id: orgId, weight, turn_used: 0, weight_updated_at: at, weight_updated_by: by })
      .onConflict('project_id')
      // A lowered weight may leave the current turn past its end: it starts again.
      .merge({ weight, weight_updated_at: at, weight_updated_by: by, turn_used: trx.raw('case when project_queue_turns.turn_used < ? then project_queue_turns.turn_used else 0 end', [weight]) });
    await audit(before)(trx);
    return { changed: true, before };
  });
}
