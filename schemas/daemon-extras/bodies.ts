/**
 * Request and reply shapes of the daemon extras (decision 0012): credentials and their rotation, plugin option
 * snapshots, interview token deltas, fleet statistics. Ids that become topic words or keys are held to patterns
 * here, so nothing hostile reaches a topic or a query.
 */
const uuid = { type: 'string', format: 'uuid' } as const;

/** A credential kind: lower-case, a topic-safe word with separators, e.g. `github-token`, `openai.api_key`. */
export const credentialKind = { type: 'string', pattern: '^[a-z0-9][a-z0-9._-]{0,63}$' } as const;

export const putCredentialBody = {
  type: 'object',
  additionalProperties: false,
  required: ['provider', 'value'],
  properties: {
    provider: { type: 'string', minLength: 1, maxLength: 64 },
    // The provider decides what it accepts (static: a non-empty string of at most 16 KiB).
    value: {},
  },
} as const;

export const credentialReply = {
  type: 'object', required: ['orgId', 'kind', 'provider', 'updatedAt'],
  properties: { orgId: uuid, kind: { type: 'string' }, provider: { type: 'string' }, updatedAt: { type: 'string' } },
} as const;

export const rotateBody = {
  type: 'object', additionalProperties: false, required: ['orgId', 'kind'],
  properties: { orgId: { type: 'string', minLength: 1, maxLength: 64 }, kind: credentialKind },
} as const;

export const rotateReply = {
  type: 'object', required: ['ok', 'kind', 'sessionCount', 'rotatedAt'],
  properties: {
    ok: { const: true }, kind: { type: 'string' }, sessionCount: { type: 'integer', minimum: 0 }, rotatedAt: { type: 'string', format: 'date-time' },
  },
} as const;

/** At most this many snapshots per request; a daemon with more plugins sends several requests. */
export const MAX_SNAPSHOTS = 500;
/** Options of one verb, serialised; a larger entry is skipped (with its reason), not stored. */
export const MAX_OPTIONS_BYTES = 64 * 1024;

export const optionsSnapshotBody = {
  type: 'object',
  additionalProperties: false,
  required: ['orgId', 'projectId', 'snapshots'],
  properties: {
    orgId: { type: 'string', minLength: 1, maxLength: 64 },
    projectId: { type: 'string', minLength: 1, maxLength: 64 },
    // Entries are checked one by one in the handler: a malformed entry is skipped with its reason, the rest stored.
    snapshots: { type: 'array', maxItems: MAX_SNAPSHOTS, items: {} },
  },
} as const;

export const optionsSnapshotReply = {
  type: 'object', required: ['ok', 'upserted', 'skipped'],
  properties: { ok: { const: true }, upserted: { type: 'integer' }, skipped: { type: 'array', items: { type: 'string' } } },
} as const;

export const MAX_TOKENS_PER_POST = 2000;
export const MAX_TOKEN_LENGTH = 4096;

export const interviewDeltasBody = {
  type: 'object', additionalProperties: false, required: ['tokens'],
  properties: { tokens: { type: 'array', maxItems: MAX_TOKENS_PER_POST, items: { type: 'string', maxLength: MAX_TOKEN_LENGTH } } },
} as const;

export const interviewDeltasReply = {
  type: 'object', required: ['ok', 'accepted'], properties: { ok: { const: true }, accepted: { type: 'integer' } },
} as const;

export const fleetStatsReply = {
  type: 'object',
  required: ['workers', 'capacity', 'sessions', 'queue', 'quota', 'generatedAt'],
  properties: {
    workers: {
      type: 'object', required: ['live', 'registered', 'paused'],
      properties: {
        live: { type: 'integer' }, registered: { type: 'integer' },
        paused: { type: 'integer', description: 'Workers paused by `POST /api/workers/{workerId}/pause`: offered no new work' },
      },
    },
    capacity: {
      type: 'object', required: ['total', 'inUse', 'free'],
      properties: { total: { type: 'integer' }, inUse: { type: 'integer' }, free: { type: 'integer' } },
    },
    sessions: { type: 'object', required: ['byStatus', 'total'], properties: { byStatus: { type: 'object' }, total: { type: 'integer' } } },
    queue: {
      type: 'object', required: ['depth', 'waitingForLock', 'oldestPendingAt', 'pausedProjects'],
      properties: {
        depth: { type: 'integer' }, waitingForLock: { type: 'integer' }, oldestPendingAt: { type: ['string', 'null'] },
        pausedProjects: {
          type: 'array',
          description: 'Projects whose queues are paused (`POST /api/projects/{projectId}/queue/pause`): their pending sessions count in `depth` but are offered to no worker',
          items: {
            type: 'object', required: ['projectId', 'pausedAt', 'pausedBy'],
            properties: { projectId: { type: 'string' }, pausedAt: { type: 'string', format: 'date-time' }, pausedBy: { type: 'string' } },
          },
        },
      },
    },
    quota: {
      type: 'object', required: ['period', 'sessions', 'costUsd'],
      properties: { period: { type: 'string' }, sessions: { type: 'integer' }, costUsd: { type: 'number' } },
    },
    budgets: {
      type: 'array', description: "Spend this UTC month against budget, for each project that has one (decision 0080)",
      items: {
        type: 'object', required: ['projectId', 'monthlyUsd', 'perSessionUsd', 'spentThisMonthUsd'],
        properties: {
          projectId: { type: 'string' }, monthlyUsd: { type: ['number', 'null'] }, perSessionUsd: { type: ['number', 'null'] },
          spentThisMonthUsd: { type: 'number' },
        },
      },
    },
    generatedAt: { type: 'string' },
  },
} as const;

export const workerListReply = {
  type: 'object',
  required: ['workers'],
  properties: {
    workers: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'hostname', 'maxAgents', 'activeSessions', 'projects', 'registeredAt', 'lastSeenAt', 'live', 'paused', 'pausedAt', 'pausedBy'],
        properties: {
          id: { type: 'string' }, hostname: { type: 'string' },
          maxAgents: { type: 'integer', description: 'Capacity: sessions it runs at once' },
          activeSessions: { type: 'integer', description: 'Load: sessions it holds now' },
          projects: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, name: { type: ['string', 'null'] } } } },
          registeredAt: { type: 'string' }, lastSeenAt: { type: 'string', description: 'Last heartbeat or poll' },
          live: { type: 'boolean', description: 'Seen within the session lease' },
          paused: { type: 'boolean', description: 'Paused (`POST /api/workers/{workerId}/pause`): offered no new work; what it runs goes on' },
          pausedAt: { type: ['string', 'null'], format: 'date-time' }, pausedBy: { type: ['string', 'null'] },
        },
      },
    },
  },
} as const;
