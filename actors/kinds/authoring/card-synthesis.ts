import { TroupeError } from '../../../ops/kernel/errors.js';
import { ajv, compileOnFirstUse, fieldOf } from '../../../schemas/ajv.js';
import { agentCardDraft } from '../../../schemas/authoring/http.js';
import type { AgentCardDraft } from '../../../schemas/authoring/proposal.js';
import type { SynthesisRequest } from './conversation.js';
import type { ClarificationQuestion } from './synthesis.js';
import { digestOf } from './digest.js';

/**
 * Agent-card synthesis (spec 4.8 "a validated workflow or agent-card draft"; issue 17; decision 0029): from a
 * synthesis request with `target: agentCard`, either the questions still open or one candidate card. Pure and
 * deterministic like workflow synthesis: no clock, no randomness, no model; the same request gives the same card,
 * member for member, and every candidate passes the agent-card payload schema the card routes use.
 *
 * The card: `name` is the goal; `description` the role round's answer; `prompt` the role and the standing
 * instructions as a numbered list; `capabilities` the abilities round's, sorted and without repeats; `model` the one
 * named, or `default` (the worker's own choice); `config` says where the draft came from.
 */
export const DEFAULT_CARD_MODEL = 'default';

export type CardSynthesisResult =
  | { readonly status: 'question'; readonly questions: readonly ClarificationQuestion[] }
  | { readonly status: 'candidate'; readonly card: AgentCardDraft };

export function synthesizeAgentCard(request: SynthesisRequest): CardSynthesisResult {
  const description = (request.description ?? '').trim();
  const instructions = (request.instructions ?? []).map((s) => s.trim()).filter((s) => s !== '');
  const questions: ClarificationQuestion[] = [];
  if (description === '') questions.push({ field: 'description', question: 'What is this agent for?' });
  if (instructions.length === 0) questions.push({ field: 'instructions', question: 'What must the agent always do, or never do?' });
  if (request.capabilities === undefined) questions.push({ field: 'capabilities', question: 'Which capabilities may it use? (an empty list means none)' });
  if (questions.length > 0) return { status: 'question', questions };

  const goal = request.goal.trim();
  const card: AgentCardDraft = {
    name: clip(goal, 200),
    description: clip(description, 4000),
    prompt: [`You are an agent for: ${goal}`, '', description, '', 'Always follow these instructions:', ...instructions.map((line, i) => `${i + 1}. ${line}`)].join('\n'),
    capabilities: [...new Set(request.capabilities ?? [])].sort(),
    model: (request.model ?? '').trim() || DEFAULT_CARD_MODEL,
    config: { draftedBy: 'troupe-authoring', schemaVersion: '1' },
  };
  assertValidCard(card);
  return { status: 'candidate', card };
}

const validCard = compileOnFirstUse(ajv, agentCardDraft);

/** Throws VALIDATION_FAILED naming the card field at fault: a card is checked as the card routes check a payload. */
export function assertValidCard(card: unknown): asserts card is AgentCardDraft {
  if (validCard(card)) return;
  const first = validCard.errors?.[0];
  const field = ['card', first ? fieldOf(first) : ''].filter(Boolean).join('.');
  throw new TroupeError('VALIDATION_FAILED', `field '${field}' ${first?.message ?? 'is invalid'}`, { field });
}

/** The candidate digest of an agent-card draft: the same rule as a workflow plan's (`{target, plan}`). */
export const cardCandidateDigest = (card: AgentCardDraft): string => digestOf({ target: 'agentCard', card });

/** Cuts at a code point boundary, never inside a surrogate pair. */
function clip(text: string, max: number): string {
  const points = Array.from(text);
  return points.length <= max ? text : points.slice(0, max).join('');
}
