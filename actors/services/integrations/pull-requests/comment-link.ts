import type { Knex } from 'knex';
import { pullRequestOfRun } from '../../../../storage/sessions/pull-requests.js';
import { workspaceOfRun } from '../../../../storage/sessions/run-reports.js';

/**
 * The pull request a run's tracker comment links (decision 0076). The comment is owed with the run's end, in the
 * transition's transaction; the pull request is owed just after it and opened by its own outbox, so the comment waits
 * for it: while it is being opened, and for a moment when the run pushed commits but its pull request is not owed
 * yet (the instant between the two writes). It never waits longer than WAIT_FOR_OPENING_MS: then it goes without.
 */
export const WAIT_FOR_OPENING_MS = 5 * 60_000;
/** How long a pushed run's pull request may take to be owed before the comment stops expecting one. */
const WAIT_FOR_OWING_MS = 30_000;

export type CommentLink =
  | { readonly wait: true }
  | { readonly wait: false; readonly pullRequest: { readonly number: number; readonly url: string } | null };

const none: CommentLink = { wait: false, pullRequest: null };

export async function pullRequestLinkFor(
  db: Knex, c: { orgId: string; sessionId: string; epoch: number; createdAt: Date }, now: number,
): Promise<CommentLink> {
  const pr = await pullRequestOfRun(db, c.orgId, c.sessionId, c.epoch);
  if (pr?.status === 'opened' && pr.number !== null && pr.url !== null) return { wait: false, pullRequest: { number: pr.number, url: pr.url } };
  const age = now - c.createdAt.getTime();
  if (pr?.status === 'pending') return age < WAIT_FOR_OPENING_MS ? { wait: true } : none;
  if (pr !== null || age >= WAIT_FOR_OWING_MS) return none;
  const workspace = await workspaceOfRun(db, c.orgId, c.sessionId, c.epoch);
  return workspace?.pushed === true && workspace.commits.length > 0 ? { wait: true } : none;
}
