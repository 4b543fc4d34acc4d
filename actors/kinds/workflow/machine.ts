import { accept, reject, type DecideContext, type Decision, type Rejection } from '../../runtime/machine.js';
import { choose, defineMachine, go, type Take } from '../../runtime/define-machine.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { analyseDefinition, emptyDefinitionYaml } from './definition.js';
import type { Trigger } from './trigger.js';

/**
 * One workflow: its status and its current canvas. Every accepted change is a new, immutable version snapshot
 * (spec 2.1), so the actor's own version counter is the source of gap-free numbering: the mailbox serialises
 * concurrent PATCHes and each accepted one takes `version + 1`.
 *
 * Statuses:
 * - absent: nothing created at this address yet; only `workflow.create` is accepted.
 * - draft: editable; the execution layer starts no runs.
 * - published: live. There is no draft/live split (spec 9.3): every change to a published workflow changes the
 *   live definition, so any change that leaves it published, or moves it out of published, needs publish authority
 *   (`mayPublish`).
 * - archived: kept for history; starts no runs; may be moved back to draft or published.
 *
 * Authorization happens at the edge, but whether a change *publishes* depends on the state at the moment it is
 * applied; the edge therefore passes `mayPublish` (the Cedar `publish` verdict) and the decision is taken here,
 * atomically with the change (decision 0008).
 */

export const workflowStatuses = ['absent', 'draft', 'published', 'archived'] as const;
export type WorkflowStatus = (typeof workflowStatuses)[number];
export type LiveStatus = Exclude<WorkflowStatus, 'absent'>;

export interface WorkflowContent {
  readonly name: string;
  readonly nodes: readonly unknown[];
  readonly edges: readonly unknown[];
  readonly viewport: Readonly<Record<string, unknown>>;
  readonly definitionYaml: string;
  readonly triggerConfig: Readonly<Record<string, unknown>>;
  readonly providerRequirements: readonly unknown[];
  readonly workflowConfig: Readonly<Record<string, unknown>>;
}

export type ContentChanges = Partial<WorkflowContent>;

/** Who made a change: the audit actor id and the label stored as `changedBy`. */
export interface ChangeActor {
  readonly id: string;
  readonly label: string;
}

export interface VersionSnapshot extends WorkflowContent {
  readonly version: number;
  readonly status: LiveStatus;
  readonly definitionVersion: 'v1.1' | 'v2';
  readonly schemaHash: string;
  readonly changedBy: string;
  readonly changeReason: string | null;
  readonly createdAt: string;
}

export type WorkflowState =
  | { readonly status: 'absent' }
  | {
      readonly status: LiveStatus;
      readonly orgId: string;
      readonly projectId: string;
      readonly version: number;
      readonly publishedVersion: number | null;
      readonly createdBy: string;
      readonly createdAt: string;
      readonly current: VersionSnapshot;
    };

export type WorkflowMsg =
  | { readonly type: 'workflow.create'; readonly orgId: string; readonly projectId: string; readonly content: ContentChanges & { name: string }; readonly actor: ChangeActor }
  | {
      readonly type: 'workflow.update'; readonly orgId: string; readonly changes: ContentChanges; readonly status?: LiveStatus;
      readonly changeReason?: string; readonly actor: ChangeActor; readonly mayPublish: boolean;
    }
  | {
      readonly type: 'workflow.rollback'; readonly orgId: string; readonly toVersion: number; readonly content: WorkflowContent;
      readonly actor: ChangeActor; readonly mayPublish: boolean;
    };

export type WorkflowMsgType = WorkflowMsg['type'];
export const workflowMsgTypes: readonly WorkflowMsgType[] = ['workflow.create', 'workflow.update', 'workflow.rollback'];

export interface WorkflowView {
  readonly id: string;
  readonly orgId: string;
  readonly projectId: string;
  readonly status: LiveStatus;
  readonly version: number;
  readonly publishedVersion: number | null;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly current: VersionSnapshot;
  /**
   * In the reply to a change that starts, moves or ends a schedule: the deployment the workflow's schedule must apply
   * before the change is answered (changeWorkflow in ./change.ts). Absent when no schedule is concerned.
   */
  readonly scheduleDeployment?: Deployment;
}

/**
 * Every accepted change is a version (`snapshot`), and with it what the execution layer is deployed with: the
 * checked trigger of the new current version and the version runs start on (null unless published).
 */
export type WorkflowEffect = {
  readonly type: 'versionCreated';
  readonly actorId: string;
  readonly snapshot: VersionSnapshot;
  readonly deployment: Deployment;
};

export interface Deployment {
  readonly orgId: string;
  readonly projectId: string;
  readonly workflowVersion: number;
  readonly publishedVersion: number | null;
  readonly trigger: Trigger;
}

export const initialWorkflowState = (): WorkflowState => ({ status: 'absent' });

type D = Decision<WorkflowState, WorkflowEffect, WorkflowView>;
type LiveWorkflow = Extract<WorkflowState, { orgId: string }>;
type On<T extends WorkflowMsgType, To, In = LiveWorkflow> =
  Take<WorkflowState, Extract<WorkflowMsg, { type: T }>, WorkflowEffect, WorkflowView, WorkflowStatus, To, In>;

const noPublishAuthority = (): Rejection => reject('AUTHZ_DENIED', 'not allowed to publish this Workflow', { action: 'publish', resourceType: 'Workflow' });

const create: On<'workflow.create', 'draft', { status: 'absent' }> = (_state, msg, ctx) =>
  snapshot(null, { orgId: msg.orgId, projectId: msg.projectId, createdBy: msg.actor.label, createdAt: iso(ctx.now) }, ctx.to, fillContent(msg.content), msg.actor, null, ctx);

/**
 * An edit may also move the workflow to any status the table lists. Publish authority is needed for a change that
 * leaves it published and for one that takes it out of `published` (to draft or archived): unpublishing stops a live
 * workflow, which is as much a publish decision as starting it (issue 16).
 */
const update: On<'workflow.update', readonly LiveStatus[]> = (state, msg, ctx) => {
  const next = msg.status ?? state.status;
  if (!ctx.to.includes(next)) return reject('ILLEGAL_TRANSITION', `cannot move a ${state.status} workflow to ${next}`);
  if ((next === 'published' || state.status === 'published') && !msg.mayPublish) return noPublishAuthority();
  const changes = defined(msg.changes);
  return snapshot(state, state, next, { ...state.current, ...changes, ...triggerFollowingYaml(changes) }, msg.actor, msg.changeReason ?? null, ctx);
};

/** A rollback is a new version with an old version's content, in the same status. */
const rollback: On<'workflow.rollback', LiveStatus> = (state, msg, ctx) => {
  if (!Number.isSafeInteger(msg.toVersion) || msg.toVersion < 1 || msg.toVersion > state.version) {
    return reject('NOT_FOUND', `workflow has no version ${msg.toVersion}`);
  }
  if (ctx.to === 'published' && !msg.mayPublish) return noPublishAuthority();
  return snapshot(state, state, ctx.to, msg.content, msg.actor, `rollback to version ${msg.toVersion}`, ctx);
};

const anyLive = ['draft', 'published', 'archived'] as const;
export const workflowMachine = defineMachine<WorkflowState, WorkflowMsg, WorkflowEffect, WorkflowView, WorkflowStatus>({
  statuses: workflowStatuses,
  messageTypes: workflowMsgTypes,
  statusOf: (state) => state.status,
  // Another org's workflow is indistinguishable from an absent one (a create still learns this id is taken).
  screen: (state, msg) => (state.status !== 'absent' && msg.type !== 'workflow.create' && msg.orgId !== state.orgId
    ? reject('NOT_FOUND', 'workflow not found')
    : undefined),
  refuse: (from) => (from === 'absent' ? reject('NOT_FOUND', 'workflow not found') : reject('ALREADY_EXISTS', 'workflow already exists')),
  table: {
    absent: { 'workflow.create': go('draft', create) },
    draft: { 'workflow.update': choose(anyLive, update), 'workflow.rollback': go('draft', rollback) },
    published: { 'workflow.update': choose(anyLive, update), 'workflow.rollback': go('published', rollback) },
    archived: { 'workflow.update': choose(anyLive, update), 'workflow.rollback': go('archived', rollback) },
  },
});

/** A workflow's public shape, from its state. */
export function viewOf(id: string, state: Extract<WorkflowState, { orgId: string }>): WorkflowView {
  return {
    id, orgId: state.orgId, projectId: state.projectId, status: state.status, version: state.version,
    publishedVersion: state.publishedVersion, createdBy: state.createdBy, createdAt: state.createdAt,
    updatedAt: state.current.createdAt, current: state.current,
  };
}

function snapshot(
  previous: LiveWorkflow | null,
  owner: { orgId: string; projectId: string; createdBy: string; createdAt: string },
  status: LiveStatus, content: WorkflowContent, actor: ChangeActor, changeReason: string | null, ctx: DecideContext,
): D {
  let analysed;
  try {
    analysed = analyseDefinition(content.definitionYaml);
  } catch (err) {
    if (err instanceof TroupeError) return reject(err.code, err.message, err.details);
    throw err;
  }
  const version = (previous?.version ?? 0) + 1;
  const current: VersionSnapshot = {
    ...content,
    version,
    status,
    definitionVersion: analysed.definitionVersion,
    schemaHash: analysed.schemaHash,
    changedBy: actor.label,
    changeReason,
    createdAt: iso(ctx.now),
  };
  const next: WorkflowState = {
    status,
    orgId: owner.orgId,
    projectId: owner.projectId,
    version,
    // Deploying is pointing the execution layer at this version; a draft or archived workflow starts no runs.
    publishedVersion: status === 'published' ? version : null,
    createdBy: owner.createdBy,
    createdAt: owner.createdAt,
    current,
  };
  const deployment: Deployment = {
    orgId: next.orgId, projectId: next.projectId, workflowVersion: version, publishedVersion: next.publishedVersion, trigger: analysed.deployedTrigger,
  };
  const reply: WorkflowView = schedules(deployment) || wasScheduled(previous)
    ? { ...viewOf(ctx.id, next), scheduleDeployment: deployment }
    : viewOf(ctx.id, next);
  return accept(next, reply, [{ type: 'versionCreated', actorId: actor.id, snapshot: current, deployment }]);
}

const schedules = (d: Deployment): boolean => d.publishedVersion !== null && d.trigger.type === 'schedule';

/** Whether the version before this change ran a schedule, which the change may move or end. */
function wasScheduled(previous: LiveWorkflow | null): boolean {
  if (previous === null || previous.publishedVersion === null) return false;
  try {
    return analyseDefinition(previous.current.definitionYaml).deployedTrigger.type === 'schedule';
  } catch {
    return true; // stored before a rule tightened: ask anyway, a schedule ignores a deployment that changes nothing for it
  }
}

function fillContent(c: ContentChanges & { name: string }): WorkflowContent {
  const definitionYaml = c.definitionYaml ?? emptyDefinitionYaml(c.name);
  // Trigger, providers and config follow the definition unless the canvas states them explicitly.
  let fromYaml: { trigger: Record<string, unknown>; providers: readonly string[]; config: Record<string, unknown> } = { trigger: { type: 'manual' }, providers: [], config: {} };
  try { fromYaml = analyseDefinition(definitionYaml); } catch { /* reported by snapshot() */ }
  return {
    name: c.name,
    nodes: c.nodes ?? [],
    edges: c.edges ?? [],
    viewport: c.viewport ?? { x: 0, y: 0, zoom: 1 },
    definitionYaml,
    triggerConfig: c.triggerConfig ?? fromYaml.trigger,
    providerRequirements: c.providerRequirements ?? [...fromYaml.providers],
    workflowConfig: c.workflowConfig ?? fromYaml.config,
  };
}

/**
 * A new definition brings its own trigger: unless the change states `triggerConfig` too, the snapshot's trigger
 * configuration follows the YAML, so it never describes a trigger the deployed definition no longer has.
 */
function triggerFollowingYaml(changes: ContentChanges): ContentChanges {
  if (changes.definitionYaml === undefined || changes.triggerConfig !== undefined) return {};
  try {
    return { triggerConfig: analyseDefinition(changes.definitionYaml).trigger };
  } catch {
    return {}; // reported by snapshot()
  }
}

function defined(changes: ContentChanges): ContentChanges {
  return Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) as ContentChanges;
}

const iso = (ms: number): string => new Date(ms).toISOString();

