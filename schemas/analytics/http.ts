/**
 * Request and reply shapes of the analytics routes (http/routes/analytics.ts). Query values arrive as strings.
 */
const iso = { type: 'string', format: 'date-time' } as const;
const shortText = { type: 'string', minLength: 1, maxLength: 200 } as const;
const weight = { type: 'number', minimum: -1e6, maximum: 1e6 } as const;
const entityRef = {
  type: 'object', additionalProperties: false, required: ['type', 'name'],
  properties: { type: shortText, name: shortText },
} as const;

export const phaseMetricsQuery = {
  type: 'object', additionalProperties: false,
  properties: { timeRange: { enum: ['7d', '30d', '90d'] } },
} as const;

const phaseFigures = {
  type: 'object', required: ['avgCycleTimeMs', 'avgCostUsd', 'avgAttempts', 'totalRecords'],
  properties: { avgCycleTimeMs: { type: 'number' }, avgCostUsd: { type: 'number' }, avgAttempts: { type: 'number' }, totalRecords: { type: 'integer' } },
} as const;

export const phaseMetricsReply = {
  type: 'object', required: ['timeRange', 'phases', 'reworkRate', 'escalationDistribution', 'issueCount', 'timestamp'],
  properties: {
    timeRange: { enum: ['7d', '30d', '90d'] },
    phases: { type: 'object', additionalProperties: phaseFigures },
    reworkRate: { type: 'number' },
    escalationDistribution: { type: 'object', additionalProperties: { type: 'number' } },
    issueCount: { type: 'integer' },
    timestamp: iso,
  },
} as const;

export const MAX_OBSERVATIONS_PAGE = 100;
export const routerQuery = {
  type: 'object', additionalProperties: false,
  properties: {
    cursor: { type: 'string', minLength: 1, maxLength: 512, pattern: '^[A-Za-z0-9_-]+$' },
    limit: { type: 'string', pattern: '^[0-9]{1,3}$' },
  },
} as const;

export const routerReply = {
  type: 'object', required: ['arms', 'observations', 'nextCursor', 'health'],
  properties: {
    arms: {
      type: 'array',
      items: {
        type: 'object', required: ['provider', 'workType', 'alpha', 'beta', 'mean', 'samples'],
        properties: {
          provider: { type: 'string' }, workType: { type: 'string' }, alpha: { type: 'number' }, beta: { type: 'number' },
          mean: { type: 'number' }, samples: { type: 'integer' },
        },
      },
    },
    observations: {
      type: 'array',
      items: {
        type: 'object', required: ['id', 'sessionId', 'workType', 'status', 'success', 'createdAt'],
        properties: {
          id: { type: 'string' }, sessionId: { type: 'string' }, provider: { type: ['string', 'null'] }, workType: { type: 'string' },
          status: { type: 'string' }, success: { type: 'boolean' }, costUsd: { type: 'number' }, durationMs: { type: ['number', 'null'] },
          createdAt: iso,
        },
      },
    },
    nextCursor: { type: ['string', 'null'] },
    health: {
      type: 'object', required: ['status'],
      properties: {
        status: { enum: ['healthy', 'degraded', 'no_data'], description: "'degraded': the last day's success rate is under half on 10 or more runs" },
        arms: { type: 'integer' }, coldArms: { type: 'integer' }, observations24h: { type: 'integer' },
        successRate24h: { type: ['number', 'null'] }, routedDispatches24h: { type: 'integer' }, lastObservationAt: { type: ['string', 'null'] },
      },
    },
  },
} as const;

export const aggregatesReply = {
  type: 'object', required: ['bucket', 'from', 'to', 'kAnonymityFloor', 'rows', 'suppressedRows', 'generatedAt'],
  properties: {
    bucket: { const: 'week' }, from: iso, to: iso, kAnonymityFloor: { type: 'integer' }, suppressedRows: { type: 'integer' }, generatedAt: iso,
    rows: {
      type: 'array',
      items: {
        type: 'object', additionalProperties: false, required: ['weekStart', 'outcome', 'sessions', 'avgCostUsd', 'avgDurationMs'],
        properties: {
          weekStart: { type: 'string' }, outcome: { enum: ['completed', 'failed', 'stopped'] }, sessions: { type: 'integer' },
          avgCostUsd: { type: 'number' }, avgDurationMs: { type: ['number', 'null'] },
        },
      },
    },
  },
} as const;

export const graphQuery = {
  type: 'object', additionalProperties: false,
  // A number of days (1 to 3650) or `all`.
  properties: { window: { type: 'string', pattern: '^(all|[1-9][0-9]{0,3})$' } },
} as const;

const graphNode = {
  type: 'object', additionalProperties: false,
  required: ['id', 'name', 'type', 'description', 'createdAt', 'importanceWeight', 'feedbackWeight', 'properties', 'recall', 'position'],
  properties: {
    id: { type: 'string' }, name: { type: 'string' }, type: { type: 'string' }, description: { type: 'string' }, createdAt: iso,
    importanceWeight: { type: 'number' }, feedbackWeight: { type: 'number' }, properties: { type: 'object' },
    recall: {
      type: 'object', additionalProperties: false, required: ['sessions', 'lastRecalled'],
      properties: { sessions: { type: 'integer' }, lastRecalled: iso },
    },
    position: { type: 'object', additionalProperties: false, required: ['x', 'y'], properties: { x: { type: 'number' }, y: { type: 'number' } } },
  },
} as const;

export const graphReply = {
  type: 'object', additionalProperties: false, required: ['nodes', 'edges', 'truncated', 'edgesTruncated', 'window'],
  properties: {
    nodes: { type: 'array', items: graphNode },
    edges: {
      type: 'array',
      items: {
        type: 'object', additionalProperties: false, required: ['id', 'source', 'target', 'relationshipName'],
        properties: { id: { type: 'string' }, source: { type: 'string' }, target: { type: 'string' }, relationshipName: { type: 'string' } },
      },
    },
    truncated: { type: 'boolean' },
    edgesTruncated: { type: 'boolean' },
    window: { type: 'object', additionalProperties: false, required: ['days'], properties: { days: { type: 'integer' } } },
  },
} as const;

/** At most this many entities and relationships per write: one session's batch, bounded so one request stays cheap. */
export const MAX_GRAPH_ENTITIES = 100;
export const MAX_GRAPH_RELATIONSHIPS = 200;

export const graphWriteBody = {
  type: 'object', additionalProperties: false, required: ['entities'],
  properties: {
    sessionId: { type: 'string', pattern: '^[0-9a-f]{16}$' },
    entities: {
      type: 'array', maxItems: MAX_GRAPH_ENTITIES,
      items: {
        type: 'object', additionalProperties: false, required: ['type', 'name'],
        properties: {
          type: shortText, name: shortText,
          description: { type: 'string', maxLength: 4000 },
          properties: { type: 'object', maxProperties: 50 },
          importanceWeight: weight,
          feedbackWeight: weight,
        },
      },
    },
    relationships: {
      type: 'array', maxItems: MAX_GRAPH_RELATIONSHIPS,
      items: {
        type: 'object', additionalProperties: false, required: ['source', 'target', 'relationshipName'],
        properties: { source: entityRef, target: entityRef, relationshipName: shortText },
      },
    },
  },
} as const;

export const graphWriteReply = {
  type: 'object', required: ['entities', 'relationships', 'recalls'],
  properties: { entities: { type: 'integer' }, relationships: { type: 'integer' }, recalls: { type: 'integer' } },
} as const;

export const paletteQuery = {
  type: 'object', additionalProperties: false,
  properties: { kind: { type: 'string', minLength: 1, maxLength: 50 } },
} as const;

export const paletteReply = {
  type: 'object', required: ['groups'],
  properties: {
    groups: {
      type: 'object',
      additionalProperties: {
        type: 'array',
        items: {
          type: 'object', required: ['id', 'kind', 'provider', 'name'],
          description: 'One palette entry; members beyond these depend on the kind (an integration, OAuth connection, plugin verb, worker…)',
          properties: { id: { type: 'string' }, kind: { type: 'string' }, provider: { type: 'string' }, name: { type: 'string' } },
        },
      },
    },
  },
} as const;

export const operatorSessionsQuery = {
  type: 'object', additionalProperties: false,
  properties: {
    status: { enum: ['pending', 'claimed', 'running', 'paused', 'finalizing', 'completed', 'failed', 'stopped'] },
    limit: { type: 'string', pattern: '^[0-9]{1,3}$' },
  },
} as const;

/** One row of `GET /api/fleet/sessions` (storage/analytics/operator.ts). */
export const operatorSessionRow = {
  type: 'object',
  required: ['id', 'projectId', 'status', 'phase', 'provider', 'workType', 'trackerIssue', 'workerId', 'workerHostname', 'costUsd', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string' }, projectId: { type: 'string' }, status: operatorSessionsQuery.properties.status,
    phase: { type: ['string', 'null'] }, provider: { type: ['string', 'null'] }, workType: { type: ['string', 'null'] },
    trackerIssue: { type: ['string', 'null'] }, workerId: { type: ['string', 'null'] }, workerHostname: { type: ['string', 'null'] },
    costUsd: { type: 'number' }, createdAt: iso, updatedAt: iso,
  },
} as const;
