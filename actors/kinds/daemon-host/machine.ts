import { accept, reject } from '../../runtime/machine.js';
import { defineMachine, go, type Take } from '../../runtime/define-machine.js';

/**
 * The daemon host (`daemon-host/<workerId>`): one registered worker daemon, its declared capacity, the projects it
 * serves, and its queue of configuration mutations (spec 3.2). Statuses:
 * - absent:     no daemon registered under this worker id.
 * - registered: registered; mutations may be enqueued, delivered and cancelled.
 *
 * A mutation is pending until a heartbeat takes it (`daemonHost.deliver` stamps deliveredAt in the same durable
 * write that answers the heartbeat) or a cancel ends it. Both go through this actor's mailbox, so a cancel racing
 * a delivery has exactly one winner. Only pending mutations live in the state; history is the `daemon_mutations`
 * read model. Liveness is *not* here: heartbeats are too frequent to be actor messages (decision 0007).
 */
export const daemonHostStatuses = ['absent', 'registered'] as const;
export type DaemonHostStatus = (typeof daemonHostStatuses)[number];

/** `worker.drain` is enqueued only by `POST /api/workers/{workerId}/drain` (audited there), never by the operator queue route. */
export const mutationOps = ['project.add', 'project.remove', 'pool.deleted', 'modelAccess.set', 'modelAccess.clear', 'worker.drain'] as const;
export type MutationOp = (typeof mutationOps)[number];

/** A daemon offline for long must not accumulate an unbounded queue; past this, enqueue is refused with 409. */
export const MAX_PENDING_MUTATIONS = 100;

export interface PendingMutation {
  readonly id: string;
  readonly op: MutationOp;
  readonly params: Record<string, unknown>;
  readonly requestedBy: string;
  readonly createdAt: number;
}

export interface DaemonHostState {
  readonly status: DaemonHostStatus;
  readonly orgId: string | null;
  readonly registrationId: string | null;
  readonly hostname: string;
  readonly maxAgents: number;
  readonly projectIds: readonly string[];
  readonly registeredAt: number;
  readonly pending: readonly PendingMutation[];
}

export const initialDaemonHostState = (): DaemonHostState => ({
  status: 'absent', orgId: null, registrationId: null, hostname: '', maxAgents: 0, projectIds: [], registeredAt: 0, pending: [],
});

export type DaemonHostMsg =
  | {
      readonly type: 'daemonHost.register';
      readonly orgId: string;
      readonly registrationId: string;
      readonly hostname: string;
      readonly maxAgents: number;
      readonly projectIds: readonly string[];
    }
  | { readonly type: 'daemonHost.enqueue'; readonly mutationId: string; readonly op: MutationOp; readonly params: Record<string, unknown>; readonly requestedBy: string }
  | { readonly type: 'daemonHost.deliver' }
  | { readonly type: 'daemonHost.cancel'; readonly mutationId: string };

export type DaemonHostMsgType = DaemonHostMsg['type'];
export const daemonHostMsgTypes = ['daemonHost.register', 'daemonHost.enqueue', 'daemonHost.deliver', 'daemonHost.cancel'] as const satisfies readonly DaemonHostMsgType[];

/** The wire form of a mutation (spec 2.6); timestamps are ISO strings, absent until set. */
export interface MutationView {
  readonly id: string;
  readonly orgId: string;
  readonly workerHostId: string;
  readonly requestedBy: string;
  readonly op: MutationOp;
  readonly params: Record<string, unknown>;
  readonly status: 'pending' | 'delivered' | 'cancelled';
  readonly createdAt: string;
  readonly deliveredAt?: string;
  readonly cancelledAt?: string;
}

export type DaemonHostReply =
  | { readonly kind: 'registered'; readonly workerId: string; readonly projectIds: readonly string[] }
  | { readonly kind: 'enqueued'; readonly mutation: MutationView; readonly pendingCount: number }
  /** `projectIds` is the worker's allowlist after these mutations; the heartbeat refreshes its token when it changed. */
  | { readonly kind: 'delivered'; readonly mutations: readonly MutationView[]; readonly pendingCount: 0; readonly projectIds: readonly string[]; readonly projectsChanged: boolean }
  | { readonly kind: 'cancelled'; readonly mutation: MutationView; readonly pendingCount: number };

export type DaemonHostEffect =
  | { readonly type: 'workerRegistered' }
  | { readonly type: 'mutationEnqueued'; readonly mutation: PendingMutation }
  | { readonly type: 'mutationsDelivered'; readonly ids: readonly string[]; readonly at: number }
  | { readonly type: 'mutationCancelled'; readonly id: string; readonly at: number };

export function mutationView(
  workerId: string, orgId: string, m: PendingMutation, status: MutationView['status'], at?: number,
): MutationView {
  const base = {
    id: m.id, orgId, workerHostId: workerId, requestedBy: m.requestedBy, op: m.op, params: m.params, status,
    createdAt: new Date(m.createdAt).toISOString(),
  };
  if (status === 'delivered' && at !== undefined) return { ...base, deliveredAt: new Date(at).toISOString() };
  if (status === 'cancelled' && at !== undefined) return { ...base, cancelledAt: new Date(at).toISOString() };
  return base;
}

/**
 * The projects a worker may act in now (issue 30): its allowlist less every project a pending `project.remove` takes
 * away. A removal holds from the moment it is asked for; an addition only once the worker has taken it (its token then
 * names the project).
 */
export function authorisedProjects(state: Pick<DaemonHostState, 'projectIds' | 'pending'>): string[] {
  const removed = new Set(state.pending.filter((m) => m.op === 'project.remove').map((m) => m.params.projectId));
  return state.projectIds.filter((p) => !removed.has(p));
}

/** The allowlist after applying project mutations in order. */
function applyProjectOps(projectIds: readonly string[], mutations: readonly PendingMutation[]): string[] {
  const set = new Set(projectIds);
  for (const m of mutations) {
    const projectId = m.params.projectId;
    if (typeof projectId !== 'string') continue;
    if (m.op === 'project.add') set.add(projectId);
    if (m.op === 'project.remove') set.delete(projectId);
  }
  return [...set].sort();
}

type On<T extends DaemonHostMsgType, To = DaemonHostStatus> =
  Take<DaemonHostState, Extract<DaemonHostMsg, { type: T }>, DaemonHostEffect, DaemonHostReply, DaemonHostStatus, To>;

const register: On<'daemonHost.register'> = (state, msg, { id: workerId, now, to }) => {
  const next: DaemonHostState = {
    ...state, status: to, orgId: msg.orgId, registrationId: msg.registrationId, hostname: msg.hostname,
    maxAgents: msg.maxAgents, projectIds: [...msg.projectIds].sort(), registeredAt: now,
  };
  return accept(next, { kind: 'registered', workerId, projectIds: next.projectIds }, [{ type: 'workerRegistered' }]);
};

/** A retried registration of the same worker answers the same; anything else is a different daemon. */
const reRegister: On<'daemonHost.register'> = (state, msg, { id: workerId }) =>
  state.orgId === msg.orgId && state.registrationId === msg.registrationId
    ? accept(state, { kind: 'registered', workerId, projectIds: state.projectIds })
    : reject('ALREADY_EXISTS', 'a daemon is already registered under this worker id');

const enqueue: On<'daemonHost.enqueue'> = (state, msg, { id: workerId, now }) => {
  const orgId = state.orgId!;
  const existing = state.pending.find((m) => m.id === msg.mutationId);
  if (existing) return accept(state, { kind: 'enqueued', mutation: mutationView(workerId, orgId, existing, 'pending'), pendingCount: state.pending.length });
  if (state.pending.length >= MAX_PENDING_MUTATIONS) {
    return reject('CONFLICT', `a daemon host holds at most ${MAX_PENDING_MUTATIONS} undelivered mutations`);
  }
  const mutation: PendingMutation = { id: msg.mutationId, op: msg.op, params: msg.params, requestedBy: msg.requestedBy, createdAt: now };
  const next: DaemonHostState = { ...state, pending: [...state.pending, mutation] };
  return accept(next, { kind: 'enqueued', mutation: mutationView(workerId, orgId, mutation, 'pending'), pendingCount: next.pending.length },
    [{ type: 'mutationEnqueued', mutation }]);
};

const deliver: On<'daemonHost.deliver'> = (state, _msg, { id: workerId, now }) => {
  if (state.pending.length === 0) {
    return accept(state, { kind: 'delivered', mutations: [], pendingCount: 0, projectIds: state.projectIds, projectsChanged: false });
  }
  const orgId = state.orgId!;
  const projectIds = applyProjectOps(state.projectIds, state.pending);
  const projectsChanged = projectIds.join() !== state.projectIds.join();
  const next: DaemonHostState = { ...state, pending: [], projectIds };
  return accept(next, {
    kind: 'delivered',
    mutations: state.pending.map((m) => mutationView(workerId, orgId, m, 'delivered', now)),
    pendingCount: 0, projectIds, projectsChanged,
  }, [{ type: 'mutationsDelivered', ids: state.pending.map((m) => m.id), at: now }]);
};

const cancel: On<'daemonHost.cancel'> = (state, msg, { id: workerId, now }) => {
  const found = state.pending.find((m) => m.id === msg.mutationId);
  // Not pending here means delivered or already cancelled (the route has checked it exists in the org).
  if (!found) return reject('CONFLICT', 'the mutation was already delivered or cancelled');
  const next: DaemonHostState = { ...state, pending: state.pending.filter((m) => m.id !== msg.mutationId) };
  return accept(next, { kind: 'cancelled', mutation: mutationView(workerId, state.orgId!, found, 'cancelled', now), pendingCount: next.pending.length },
    [{ type: 'mutationCancelled', id: found.id, at: now }]);
};

export const daemonHostMachine = defineMachine<DaemonHostState, DaemonHostMsg, DaemonHostEffect, DaemonHostReply, DaemonHostStatus>({
  statuses: daemonHostStatuses,
  messageTypes: daemonHostMsgTypes,
  statusOf: (state) => state.status,
  refuse: () => reject('NOT_FOUND', 'daemon host not found'),
  table: {
    absent: { 'daemonHost.register': go('registered', register) },
    registered: {
      'daemonHost.register': go('registered', reRegister),
      'daemonHost.enqueue': go('registered', enqueue),
      'daemonHost.deliver': go('registered', deliver),
      'daemonHost.cancel': go('registered', cancel),
    },
  },
});
