import { accept, reject } from '../../runtime/machine.js';
import { choose, defineMachine, type Take } from '../../runtime/define-machine.js';
import type { PolicyRecord, PolicyScope, PolicyStatus, PolicyVersionRecord } from '../../../schemas/governance/policy.js';
export { type PolicyRecord, type PolicyVersionRecord } from '../../../schemas/governance/policy.js';

/**
 * The policy actor (`policy/<policyId>`) owns one stored Cedar policy and its version history.
 *
 * Statuses:
 * - absent:   never created under this id.
 * - draft:    stored and versioned, not enforced.
 * - active:   joined to the org's default policy set in every authorization decision (actors/kinds/policy/enforcement.ts).
 * - archived: kept for history, never enforced, never changed again (archive is final: create a new policy instead).
 *
 * Every change of `cedarPolicy` appends an immutable version (1, 2, …) carrying who changed it and why; other edits
 * (name, tags, status …) change the policy row but not its version history. The Cedar text has been parsed and
 * validated by the caller before the message is sent, and the version id minted there, so `decide` stays pure.
 */

export interface PolicyState {
  readonly policy: PolicyRecord | null;
}

interface PolicyFields {
  readonly name: string;
  readonly description: string;
  readonly cedarPolicy: string;
  readonly scope: PolicyScope;
  readonly scopeId: string;
  readonly regulatoryTags: readonly string[];
  readonly metadata: Readonly<Record<string, unknown>>;
}

export type PolicyMsg =
  | (PolicyFields & {
      readonly type: 'policy.create';
      readonly orgId: string;
      readonly versionId: string;
      readonly status: 'draft' | 'active';
      readonly createdBy: string;
      readonly changeReason: string;
    })
  | {
      readonly type: 'policy.update';
      readonly orgId: string;
      readonly versionId: string;
      readonly changes: Partial<PolicyFields> & { readonly status?: PolicyStatus };
      readonly changedBy: string;
      readonly changeReason: string;
    };

export type PolicyMsgType = PolicyMsg['type'];
export const policyMsgTypes = ['policy.create', 'policy.update'] as const satisfies readonly PolicyMsgType[];

export interface PolicyReply {
  readonly policy: PolicyRecord;
  /** The version appended by this change, when the Cedar text changed (always on create). */
  readonly appendedVersion: number | null;
}

export type PolicyEffect =
  | { readonly type: 'policyWritten'; readonly policy: PolicyRecord; readonly previousStatus: PolicyStatus | null; readonly by: string }
  | { readonly type: 'versionAppended'; readonly version: PolicyVersionRecord };

export const policyLifecycle = ['absent', 'draft', 'active', 'archived'] as const;
export type PolicyLifecycle = (typeof policyLifecycle)[number];

export const initialPolicyState = (): PolicyState => ({ policy: null });

export const lifecycleOf = (state: PolicyState): PolicyLifecycle => state.policy?.status ?? 'absent';

type On<T extends PolicyMsgType> =
  Take<PolicyState, Extract<PolicyMsg, { type: T }>, PolicyEffect, PolicyReply, PolicyLifecycle, readonly PolicyLifecycle[]>;

/** Creates version 1, as a draft or already active: the message names which. */
const create: On<'policy.create'> = (_state, msg, ctx) => {
  const policy: PolicyRecord = {
    id: ctx.id, orgId: msg.orgId, name: msg.name, description: msg.description, cedarPolicy: msg.cedarPolicy,
    scope: msg.scope, scopeId: msg.scopeId, status: msg.status, version: 1, regulatoryTags: [...msg.regulatoryTags],
    metadata: msg.metadata, createdBy: msg.createdBy, createdAt: ctx.now, updatedAt: ctx.now, archivedAt: null,
  };
  const version: PolicyVersionRecord = {
    id: msg.versionId, policyId: ctx.id, version: 1, cedarPolicy: msg.cedarPolicy, changedBy: msg.createdBy,
    changeReason: msg.changeReason === '' ? 'created' : msg.changeReason, createdAt: ctx.now,
  };
  return accept({ policy }, { policy, appendedVersion: 1 }, [
    { type: 'policyWritten', policy, previousStatus: null, by: msg.createdBy },
    { type: 'versionAppended', version },
  ]);
};

/** Edits the policy, and may move it to any status the table lists; a change of its Cedar text appends a version. */
const update: On<'policy.update'> = (state, msg, ctx) => {
  const current = state.policy!;
  const { changes } = msg;
  const textChanged = changes.cedarPolicy !== undefined && changes.cedarPolicy !== current.cedarPolicy;
  const status = changes.status ?? current.status;
  const next: PolicyRecord = {
    ...current,
    ...definedOnly(changes),
    status,
    version: textChanged ? current.version + 1 : current.version,
    updatedAt: ctx.now,
    archivedAt: status === 'archived' ? ctx.now : null,
  };
  const effects: PolicyEffect[] = [{ type: 'policyWritten', policy: next, previousStatus: current.status, by: msg.changedBy }];
  if (textChanged) {
    effects.push({
      type: 'versionAppended',
      version: {
        id: msg.versionId, policyId: current.id, version: next.version, cedarPolicy: next.cedarPolicy,
        changedBy: msg.changedBy, changeReason: msg.changeReason, createdAt: ctx.now,
      },
    });
  }
  return accept({ policy: next }, { policy: next, appendedVersion: textChanged ? next.version : null }, effects);
};

const anyKept = ['draft', 'active', 'archived'] as const;
export const policyMachine = defineMachine<PolicyState, PolicyMsg, PolicyEffect, PolicyReply, PolicyLifecycle>({
  statuses: policyLifecycle,
  messageTypes: policyMsgTypes,
  statusOf: lifecycleOf,
  // Another org's policy is indistinguishable from an absent one.
  screen: (state, msg) => (state.policy !== null && state.policy.orgId !== msg.orgId ? reject('NOT_FOUND', 'policy not found') : undefined),
  refuse: (from, msg) => {
    if (from === 'absent') return reject('NOT_FOUND', 'policy not found');
    if (from === 'archived') return reject('ILLEGAL_TRANSITION', 'an archived policy cannot be changed', { from, msgType: msg.type });
    return reject('ALREADY_EXISTS', 'a policy with this id already exists');
  },
  table: {
    absent: { 'policy.create': choose(['draft', 'active'], create) },
    draft: { 'policy.update': choose(anyKept, update) },
    active: { 'policy.update': choose(anyKept, update) },
    // Archive is final: a new policy takes its place.
    archived: {},
  },
});

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

