import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { canonicalJson } from '../../../ops/kernel/canonical-json.js';
import { ajv, compileOnFirstUse, fieldOf, type LazyValidate } from '../../../schemas/ajv.js';
import {
  COMPLETE, MAX_ROUNDS, roundAfter, roundsOf, roundSpecs, cardRounds, rounds, type AuthoringTarget, type NextRound, type Round,
} from './rounds.js';

/**
 * The builder conversation (spec 1.3, 2.3, 4.1): three bounded clarification rounds, no generation, no writes.
 * The state travels with the client, so every turn revalidates all of it. Integrity comes from an HMAC
 * (`stateMac`, key `secrets.derive('authoring-state')`) over the state bound to the org, project, caller,
 * conversation id and start time: a goal, target, earlier answer or round that was changed in transit fails it.
 * The structure is re-checked as well (round order, prompts, at most three rounds), so a bug in signing could not
 * let a malformed state through. Replay of a state already answered is refused through the cache; when the cache
 * is down that check is skipped, the MAC and expiry still hold (ops/decisions/0011-authoring.md).
 */

export interface BuilderTurn {
  readonly round: Round;
  readonly prompt: string;
  readonly answer: Record<string, unknown>;
  readonly answeredAt: string;
}

/** Spec 2.3. */
export interface BuilderState {
  readonly kind: 'builder-conversation';
  readonly schemaVersion: '1';
  readonly goal: string;
  readonly target: AuthoringTarget;
  readonly workflowId: string;
  readonly agentCardId: string;
  readonly nextRound: NextRound;
  readonly turns: readonly BuilderTurn[];
}

export interface ConversationToken {
  readonly id: string;
  readonly startedAt: string;
  readonly expiresAt: string;
  readonly round: number;
  readonly maxRounds: number;
  readonly stateMac: string;
}

export interface SynthesisRequest {
  readonly kind: 'synthesis-request';
  readonly schemaVersion: '1';
  readonly target: AuthoringTarget;
  readonly goal: string;
  readonly workflowId?: string;
  readonly agentCardId?: string;
  readonly outcome?: string;
  readonly steps?: readonly string[];
  readonly approval?: boolean;
  readonly approverRole?: 'owner' | 'admin' | 'member';
  readonly waitSeconds?: number;
  /** Agent-card requests (target `agentCard`). */
  readonly description?: string;
  readonly instructions?: readonly string[];
  readonly capabilities?: readonly string[];
  readonly model?: string;
}

export interface ConversationEnvelope {
  readonly status: 'question' | 'ready';
  readonly state: BuilderState;
  readonly query: { round: Round; prompt: string; answerSchema: Record<string, unknown> } | null;
  readonly synthesisRequest: SynthesisRequest | null;
  readonly conversation: ConversationToken;
}

/** Who a state is bound to: a state minted for one caller, project or org is worthless to another. */
export interface ConversationScope {
  readonly orgId: string;
  readonly projectId: string;
  /** The credential's label (`user:<id>`, `apiKey:<id>`, …). */
  readonly caller: string;
}

export interface ConversationPorts {
  readonly key: Buffer;
  readonly now: () => number;
  /** Marks a state as answered; false when it already was. Throws when the replay store is unavailable. */
  readonly markAnswered: (stateMac: string, ttlMs: number) => Promise<boolean>;
  readonly onReplayStoreDown?: (err: unknown) => void;
}

/** A conversation is a few minutes of work; a day is generous and bounds how long a leaked state is useful. */
export const CONVERSATION_TTL_MS = 24 * 60 * 60 * 1000;

export function startConversation(
  scope: ConversationScope, input: { goal: string; target?: AuthoringTarget; workflowId?: string; agentCardId?: string }, ports: ConversationPorts,
): ConversationEnvelope {
  const target = input.target ?? 'workflow';
  const state: BuilderState = {
    kind: 'builder-conversation', schemaVersion: '1', goal: input.goal, target,
    workflowId: target === 'workflow' ? input.workflowId ?? '' : '', agentCardId: input.agentCardId ?? '', nextRound: roundsOf(target)[0]!, turns: [],
  };
  return envelope(scope, state, randomUUID(), new Date(ports.now()).toISOString(), ports.key);
}

/** Reads only the token's signed members (id, startedAt, stateMac): the rest are the client's to show, and not required. */
export async function answerConversation(
  scope: ConversationScope, state: BuilderState, token: Pick<ConversationToken, 'id' | 'startedAt' | 'stateMac'>, answer: Record<string, unknown>, ports: ConversationPorts,
): Promise<ConversationEnvelope> {
  const expected = macOf(ports.key, scope, token.id, token.startedAt, state);
  if (!sameMac(expected, token.stateMac)) throw refused('state', 'was not issued for this conversation, or was changed in transit');
  const startedAt = Date.parse(token.startedAt);
  const now = ports.now();
  if (!Number.isFinite(startedAt) || startedAt > now + 60_000) throw refused('conversation.startedAt', 'is not a time this server issued');
  if (now - startedAt > CONVERSATION_TTL_MS) throw refused('conversation', 'has expired; start again');
  assertWellFormed(state);
  if (state.nextRound === COMPLETE) throw refused('state.nextRound', `is complete: a conversation has at most ${MAX_ROUNDS} rounds`);
  const round = state.nextRound;
  const validate = answerValidators[round];
  if (!validate(answer)) {
    const first = validate.errors?.[0];
    const field = first ? ['answer', fieldOf(first)].filter(Boolean).join('.') : 'answer';
    throw new TroupeError('VALIDATION_FAILED', `field '${field}' ${first?.message ?? 'is invalid'} (round '${round}')`, { field, round });
  }
  try {
    if (!(await ports.markAnswered(token.stateMac, CONVERSATION_TTL_MS))) throw refused('state', 'was already answered (replayed)');
  } catch (err) {
    if (err instanceof TroupeError && err.code === 'VALIDATION_FAILED') throw err;
    ports.onReplayStoreDown?.(err);
  }
  const turn: BuilderTurn = { round, prompt: roundSpecs[round].prompt, answer: normaliseAnswer(round, answer), answeredAt: new Date(now).toISOString() };
  const turns = [...state.turns, turn];
  const next: BuilderState = { ...state, nextRound: roundAfter(turns.length, state.target), turns };
  return envelope(scope, next, token.id, token.startedAt, ports.key);
}

/** The request synthesis takes once all three rounds are answered. */
export function synthesisRequestOf(state: BuilderState): SynthesisRequest {
  const answers = Object.fromEntries(state.turns.map((t) => [t.round, t.answer])) as Partial<Record<Round, Record<string, unknown>>>;
  if (state.target === 'agentCard') {
    const abilities = answers.abilities ?? {};
    return {
      kind: 'synthesis-request', schemaVersion: '1', target: 'agentCard', goal: state.goal, agentCardId: state.agentCardId,
      description: String(answers.role?.description ?? ''),
      instructions: (answers.instructions?.instructions as string[] | undefined) ?? [],
      capabilities: (abilities.capabilities as string[] | undefined) ?? [],
      ...(typeof abilities.model === 'string' ? { model: abilities.model } : {}),
    };
  }
  const guard = answers.guardrails ?? {};
  return {
    kind: 'synthesis-request', schemaVersion: '1', target: state.target, goal: state.goal,
    workflowId: state.workflowId, agentCardId: state.agentCardId,
    outcome: String(answers.outcome?.outcome ?? ''),
    steps: (answers.steps?.steps as string[] | undefined) ?? [],
    approval: guard.approval === true,
    ...(typeof guard.approverRole === 'string' ? { approverRole: guard.approverRole as 'owner' | 'admin' | 'member' } : {}),
    ...(typeof guard.waitSeconds === 'number' ? { waitSeconds: guard.waitSeconds } : {}),
  };
}

function envelope(scope: ConversationScope, state: BuilderState, id: string, startedAt: string, key: Buffer): ConversationEnvelope {
  const ready = state.nextRound === COMPLETE;
  const conversation: ConversationToken = {
    id, startedAt, expiresAt: new Date(Date.parse(startedAt) + CONVERSATION_TTL_MS).toISOString(),
    round: state.turns.length, maxRounds: MAX_ROUNDS, stateMac: macOf(key, scope, id, startedAt, state),
  };
  if (ready) return { status: 'ready', state, query: null, synthesisRequest: synthesisRequestOf(state), conversation };
  const round = state.nextRound as Round;
  return {
    status: 'question', state,
    query: { round, prompt: roundSpecs[round].prompt, answerSchema: roundSpecs[round].answerSchema },
    synthesisRequest: null, conversation,
  };
}

/** The structural checks a valid MAC already implies; kept so signing is never the only line of defence. */
function assertWellFormed(state: BuilderState): void {
  if (state.turns.length > MAX_ROUNDS) throw refused('state.turns', `has more than ${MAX_ROUNDS} rounds`);
  const order = roundsOf(state.target);
  if (state.target === 'agentCard' && state.workflowId !== '') throw refused('state.workflowId', 'is empty for an agent-card conversation');
  state.turns.forEach((turn, i) => {
    if (turn.round !== order[i]) throw refused(`state.turns.${i}.round`, `must be '${order[i]}' (rounds are answered in order)`);
    if (turn.prompt !== roundSpecs[turn.round].prompt) throw refused(`state.turns.${i}.prompt`, 'is not the prompt this round asks');
    if (!answerValidators[turn.round](turn.answer)) throw refused(`state.turns.${i}.answer`, 'is not a well-formed answer to its round');
    if (i > 0 && Date.parse(turn.answeredAt) < Date.parse(state.turns[i - 1]?.answeredAt ?? '')) throw refused(`state.turns.${i}.answeredAt`, 'is earlier than the round before it');
  });
  const expected = roundAfter(state.turns.length, state.target);
  if (state.nextRound !== expected) throw refused('state.nextRound', `must be '${expected}' after ${state.turns.length} answered rounds`);
}

const answerValidators = Object.fromEntries(
  [...rounds, ...cardRounds].map((r) => [r, compileOnFirstUse(ajv, roundSpecs[r].answerSchema)]),
) as Record<Round, LazyValidate>;

/** Answers are stored trimmed, so whitespace variations do not make different synthesis requests. */
function normaliseAnswer(round: Round, answer: Record<string, unknown>): Record<string, unknown> {
  switch (round) {
    case 'outcome': return { outcome: String(answer.outcome).trim() };
    case 'steps': return { steps: (answer.steps as string[]).map((s) => s.trim()) };
    case 'guardrails': return {
      approval: answer.approval === true,
      ...(answer.approverRole !== undefined ? { approverRole: answer.approverRole } : {}),
      ...(answer.waitSeconds !== undefined ? { waitSeconds: answer.waitSeconds } : {}),
    };
    case 'role': return { description: String(answer.description).trim() };
    case 'instructions': return { instructions: (answer.instructions as string[]).map((s) => s.trim()) };
    case 'abilities': return {
      // Capabilities are a set: sorted and without repeats, so equal sets make equal requests.
      capabilities: [...new Set(answer.capabilities as string[])].sort(),
      ...(typeof answer.model === 'string' ? { model: answer.model.trim() } : {}),
    };
  }
}

function macOf(key: Buffer, scope: ConversationScope, id: string, startedAt: string, state: BuilderState): string {
  const signed = canonicalJson({ v: 1, purpose: 'builder-conversation', orgId: scope.orgId, projectId: scope.projectId, caller: scope.caller, id, startedAt, state });
  return createHmac('sha256', key).update(signed, 'utf8').digest('base64url');
}

function sameMac(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const refused = (field: string, what: string): TroupeError => new TroupeError('VALIDATION_FAILED', `field '${field}' ${what}`, { field });
