import { plan } from './http.js';

/** The proposal actor's message, checked on arrival (it may have crossed the broker). */
const digest = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' } as const;
const uuid = { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' } as const;

export const proposalMessageSchema = {
  $id: 'troupe:authoring:proposal-message',
  type: 'object', additionalProperties: false,
  required: ['type', 'orgId', 'projectId', 'target', 'workflowId', 'expectedVersion', 'plan', 'digests', 'by'],
  properties: {
    type: { const: 'proposal.append' },
    orgId: uuid,
    projectId: uuid,
    target: { const: 'workflow' },
    workflowId: { anyOf: [uuid, { const: '' }] },
    expectedVersion: { type: 'integer', minimum: 0, maximum: 1_000_000 },
    plan,
    digests: {
      type: 'object', additionalProperties: false, required: ['candidateDigest', 'baseDigest', 'vocabularyDigest', 'policyDigest'],
      properties: { candidateDigest: digest, baseDigest: digest, vocabularyDigest: digest, policyDigest: digest },
    },
    by: { type: 'string', minLength: 1, maxLength: 200 },
  },
} as const;
