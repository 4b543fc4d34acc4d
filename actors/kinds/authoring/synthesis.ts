import type { SynthesisRequest } from './conversation.js';
import { assertValidPlan, type CandidatePlan, type PlanEdge, type PlanNode } from './plan.js';
import { nodeKindOf, pluginVerbOf, type Vocabulary } from './vocabulary.js';

/**
 * Draft synthesis (spec 4.8 "generate"): from a synthesis request, either the questions still open or one
 * candidate plan. Pure and deterministic: no clock, no randomness, no model; the same request and vocabulary give
 * the same plan, member for member in the same order, so the same bytes on the wire. It only uses node kinds the
 * vocabulary offers, and every candidate passes the checks a publish runs before it is returned.
 *
 * A step that opens with a plugin node key of the vocabulary (`plugin:<pluginId>.<verbId>`, then the end or
 * whitespace) becomes that plugin node, the rest of the step its instructions; a step naming a plugin verb the
 * vocabulary lacks is a question, never a guess. Every other step is an agent node.
 */

export interface ClarificationQuestion {
  readonly field: string;
  readonly question: string;
}

export type SynthesisResult =
  | { readonly status: 'question'; readonly questions: readonly ClarificationQuestion[] }
  | { readonly status: 'candidate'; readonly plan: CandidatePlan };

export function synthesize(request: SynthesisRequest, vocabulary: Vocabulary): SynthesisResult {
  const questions: ClarificationQuestion[] = [];
  const outcome = (request.outcome ?? '').trim();
  const steps = (request.steps ?? []).map((s) => s.trim()).filter((s) => s !== '');
  if (outcome === '') questions.push({ field: 'outcome', question: 'What should be true when this workflow has finished?' });
  if (steps.length === 0) questions.push({ field: 'steps', question: 'Which steps should an agent take, in order?' });
  if (request.approval === undefined) questions.push({ field: 'approval', question: 'Must a person approve before the last step?' });
  if (request.approval === false && request.approverRole !== undefined) {
    questions.push({ field: 'approverRole', question: 'An approver role was given but no approval is required: should a person approve?' });
  }
  steps.forEach((step, i) => {
    const named = pluginStepOf(step);
    if (named && !nodeKindOf(vocabulary, named.nodeKey)) {
      questions.push({ field: `steps.${i}`, question: `This project has no plugin verb '${named.nodeKey.slice(0, 300)}': which verb or instruction should take its place?` });
    }
  });
  const missingKinds = requiredKinds(request).filter((k) => !nodeKindOf(vocabulary, k));
  for (const kind of missingKinds) questions.push({ field: 'vocabulary', question: `This project's vocabulary has no '${kind}' node: which node should take its place?` });
  if (questions.length > 0) return { status: 'question', questions };

  const agentCardId = request.agentCardId ?? '';
  const card = agentCardId === '' ? {} : { agentCardId };
  const agents: PlanNode[] = steps.map((step, i): PlanNode => {
    const named = pluginStepOf(step);
    if (named) return { id: `step-${i + 1}`, nodeKey: named.nodeKey, config: { ...(named.prompt === '' ? {} : { prompt: named.prompt }), ...card } };
    return { id: `step-${i + 1}`, nodeKey: 'agent', config: { prompt: step, ...card } };
  });
  const guard: PlanNode[] = [];
  if (request.approval === true) {
    const last = steps[steps.length - 1] ?? '';
    guard.push({
      id: 'approve', nodeKey: 'approval',
      config: { title: clip(`Approve before: ${last}`, 500), ...(request.approverRole ? { requiredRole: request.approverRole } : {}) },
    });
  }
  if ((request.waitSeconds ?? 0) > 0) guard.push({ id: 'wait', nodeKey: 'wait', config: { seconds: request.waitSeconds } });
  // Guards sit before the last step: that is the step the person is approving.
  const nodes = [...agents.slice(0, -1), ...guard, ...agents.slice(-1)];
  const edges: PlanEdge[] = nodes.slice(1).map((n, i) => ({ source: (nodes[i] as PlanNode).id, target: n.id }));
  const plan: CandidatePlan = { name: clip(request.goal.trim(), 200), description: clip(outcome, 5000), nodes, edges };
  assertValidPlan(plan, vocabulary);
  return { status: 'candidate', plan };
}

/** `plugin:<p>.<v> rest…` → the node key and the rest; undefined when the step does not open with a plugin key. */
function pluginStepOf(step: string): { nodeKey: string; prompt: string } | undefined {
  const match = /^(plugin:\S+)(?:\s+([\s\S]*))?$/.exec(step);
  if (!match || pluginVerbOf(match[1] as string) === undefined) return undefined;
  return { nodeKey: match[1] as string, prompt: (match[2] ?? '').trim() };
}

function requiredKinds(request: SynthesisRequest): string[] {
  return ['agent', ...(request.approval === true ? ['approval'] : []), ...((request.waitSeconds ?? 0) > 0 ? ['wait'] : [])];
}

/** Cuts at a code point boundary, never inside a surrogate pair. */
function clip(text: string, max: number): string {
  const points = Array.from(text);
  return points.length <= max ? text : points.slice(0, max).join('');
}
