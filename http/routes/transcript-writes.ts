import type { Deps } from '../../actors/services/deps.js';
import type { FoundSession } from '../../storage/sessions/queries.js';
import { appendTranscript } from '../../storage/sessions/transcript.js';
import type { NewTranscriptEntry } from '../../storage/sessions/transcript-kinds.js';
import { transcriptFollowers } from '../../actors/services/transcripts/followers.js';

/**
 * What a worker relays about its agent, written into the session's transcript (issue 35 §1) once the relay has
 * checked the worker holds the session, then announced so followers anywhere in the cluster read it at once. Output
 * is bounded by TROUPE_TRANSCRIPT_MAX_BYTES, as are tool steps (a worker chooses how many it reports). Output lines
 * are written with the detail's tail, in one statement (storage/sessions/output-relay.ts).
 */

/** Tool steps new to the session (a retried request's repeats are left out by the caller). */
export async function recordToolStepsInTranscript(
  deps: Deps, orgId: string, session: FoundSession, steps: readonly { tool: string; summary: string; at: string; id?: string }[], now: number,
): Promise<void> {
  const entries: NewTranscriptEntry[] = steps.map((step) => ({
    kind: 'tool', text: `${step.tool}: ${step.summary}`, at: new Date(step.at), data: { tool: step.tool, ...(step.id === undefined ? {} : { stepId: step.id }) },
  }));
  await record(deps, orgId, session, entries, new Date(now));
}

async function record(deps: Deps, orgId: string, session: FoundSession, entries: readonly NewTranscriptEntry[], at: Date): Promise<void> {
  if (entries.length === 0) return;
  const appended = await appendTranscript(deps.db, orgId, session.key, entries, deps.config.transcriptMaxBytes, at);
  if (appended !== undefined) transcriptFollowers(deps).announce(orgId, session.publicId, appended.last);
}
