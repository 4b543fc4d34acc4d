/** Query and reply of `GET /api/security/metrics` (spec 2.7, 4.6; CONTRACT "Security metrics timeline cap"). */
export const securityMetricsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    metricType: { enum: ['overview', 'health', 'timeline', 'posture'] },
    timeRange: { enum: ['24h', '7d', '30d', '90d'] },
    limit: { type: 'integer', minimum: 1, maximum: 100 },
  },
} as const;

export const securityMetricsReply = {
  type: 'object',
  required: ['metrics', 'health', 'posture', 'timeline', 'actorNames'],
  properties: {
    metricType: { type: 'string' }, timeRange: { type: 'string' }, generatedAt: { type: 'string' },
    metrics: { type: 'object' }, health: { type: 'object' }, posture: { type: 'object' },
    timeline: { type: 'array', maxItems: 100, items: { type: 'object' } },
    actorNames: { type: 'object', additionalProperties: { type: 'string' } },
  },
} as const;
