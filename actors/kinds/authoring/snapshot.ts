import type { Knex } from 'knex';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { activePolicies } from '../../../storage/governance/policies.js';
import { storedVocabularySource } from './stored-vocabulary.js';
import { findWorkflow } from '../../../storage/workflows/workflows.js';
import { findCard } from '../../../storage/agent-cards/cards.js';
import { digestOf } from './digest.js';
import { loadVocabulary, vocabularyDigest, type Vocabulary, type VocabularySource } from './vocabulary.js';

/**
 * The state of the world a candidate is drafted against, as digests: the workflow's current version (base), the
 * project's vocabulary, and the active policy snapshot (which stored policies, at which versions, apply to the
 * project). Synthesis hands them out; apply recomputes them and refuses a candidate whose world has moved (409).
 * The vocabulary comes from the stored rooms (plugin verbs, palette) unless a caller passes its own sources.
 */
export interface AuthoringSnapshot {
  readonly vocabulary: Vocabulary;
  readonly baseDigest: string;
  readonly vocabularyDigest: string;
  readonly policyDigest: string;
}

export async function authoringSnapshot(
  db: Knex, orgId: string, projectId: string, workflowId: string, sources: readonly VocabularySource[] = [storedVocabularySource(db)],
): Promise<AuthoringSnapshot> {
  const [vocabulary, baseDigest, policyDigest] = await Promise.all([
    loadVocabulary(orgId, projectId, sources),
    baseDigestOf(db, orgId, projectId, workflowId),
    policyDigestOf(db, orgId, projectId),
  ]);
  return { vocabulary, baseDigest, vocabularyDigest: vocabularyDigest(vocabulary), policyDigest };
}

/** Versions are immutable and numbered by the workflow actor, so (id, version) names the base exactly. */
export async function baseDigestOf(db: Knex, orgId: string, projectId: string, workflowId: string): Promise<string> {
  if (workflowId === '') return digestOf({ workflowId: null, version: 0 });
  const workflow = await findWorkflow(db, orgId, workflowId);
  if (!workflow || workflow.projectId !== projectId) throw new TroupeError('NOT_FOUND', 'workflow not found in this project');
  return digestOf({ workflowId: workflow.id, version: workflow.version });
}

/** The same rule for an agent card: (id, version) names the card an agent-card draft is about ('' for a new one). */
export async function cardBaseDigestOf(db: Knex, orgId: string, agentCardId: string): Promise<string> {
  if (agentCardId === '') return digestOf({ agentCardId: null, version: 0 });
  const card = await findCard(db, orgId, agentCardId);
  if (!card) throw new TroupeError('NOT_FOUND', 'agent card not found');
  return digestOf({ agentCardId: card.id, version: card.version });
}

/** Policy versions are immutable too: the (id, version) list of the active set names its exact text. */
export async function policyDigestOf(db: Knex, orgId: string, projectId: string): Promise<string> {
  const active = await activePolicies(db, orgId, projectId);
  return digestOf(active.map((p) => ({ id: p.id, version: p.version })));
}
