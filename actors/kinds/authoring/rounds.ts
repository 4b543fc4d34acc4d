import { MAX_WAIT_SECONDS } from '../../../schemas/workflows/definition.js';

/**
 * The three clarification rounds of the builder conversation (spec 1.3, limit 8: three rounds), in the only order
 * they may be answered, per target: a workflow's (outcome, steps, guardrails) and an agent card's (role,
 * instructions, abilities). Each round has a fixed prompt and the schema its answer must satisfy; the prompt a turn
 * carries is checked against this table, so a client cannot rewrite what it was asked.
 */
export const rounds = ['outcome', 'steps', 'guardrails'] as const;
export const cardRounds = ['role', 'instructions', 'abilities'] as const;
export type Round = (typeof rounds)[number] | (typeof cardRounds)[number];
export type AuthoringTarget = 'workflow' | 'agentCard';
export const roundsOf = (target: AuthoringTarget): readonly Round[] => (target === 'agentCard' ? cardRounds : rounds);
/** Capability names, as agent cards take them (schemas/agents/agent-card.ts). */
const CAPABILITY_PATTERN = '^[a-z][a-z0-9_.:-]{0,99}$';
/** `nextRound` of a conversation whose three rounds are answered. */
export const COMPLETE = 'complete';
export type NextRound = Round | typeof COMPLETE;
export const MAX_ROUNDS = rounds.length;

export const MAX_STEPS = 20;
export const MAX_ANSWER_TEXT = 2000;

const answerText = { type: 'string', minLength: 1, maxLength: MAX_ANSWER_TEXT, pattern: '\\S' } as const;

export const roundSpecs = {
  outcome: {
    prompt: 'What should be true when this workflow has finished? Describe the outcome in a sentence or two.',
    answerSchema: {
      type: 'object', additionalProperties: false, required: ['outcome'],
      properties: { outcome: answerText },
    },
  },
  steps: {
    prompt: 'Which steps should an agent take, in order? Give one instruction per step.',
    answerSchema: {
      type: 'object', additionalProperties: false, required: ['steps'],
      properties: { steps: { type: 'array', minItems: 1, maxItems: MAX_STEPS, items: answerText } },
    },
  },
  guardrails: {
    prompt: 'Must a person approve before the last step, and who? Should the workflow wait before continuing after approval?',
    answerSchema: {
      type: 'object', additionalProperties: false, required: ['approval'],
      properties: {
        approval: { type: 'boolean' },
        approverRole: { enum: ['owner', 'admin', 'member'] },
        waitSeconds: { type: 'integer', minimum: 0, maximum: MAX_WAIT_SECONDS },
      },
    },
  },
  role: {
    prompt: 'What is this agent for? Describe its job in a sentence or two.',
    answerSchema: {
      type: 'object', additionalProperties: false, required: ['description'],
      properties: { description: answerText },
    },
  },
  instructions: {
    prompt: 'What must the agent always do, or never do? Give one instruction per line.',
    answerSchema: {
      type: 'object', additionalProperties: false, required: ['instructions'],
      properties: { instructions: { type: 'array', minItems: 1, maxItems: MAX_STEPS, items: answerText } },
    },
  },
  abilities: {
    prompt: 'Which capabilities may it use (for example repo.read, tracker.comment, shell), and which model should it run on?',
    answerSchema: {
      type: 'object', additionalProperties: false, required: ['capabilities'],
      properties: {
        capabilities: { type: 'array', maxItems: 50, items: { type: 'string', pattern: CAPABILITY_PATTERN } },
        model: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
      },
    },
  },
} as const satisfies Record<Round, { prompt: string; answerSchema: Record<string, unknown> }>;

export const roundAfter = (answered: number, target: AuthoringTarget = 'workflow'): NextRound => roundsOf(target)[answered] ?? COMPLETE;
