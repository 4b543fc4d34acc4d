import { MAX_REF_LENGTH, MAX_REPOSITORY_URL_LENGTH, REF_PATTERN } from '../repositories/repository.js';

/**
 * Workflow definition schemas, one per `schemaVersion` (CONTRACT.md "Workflow definitions"). `v2` is the canvas
 * form (nodes and edges); `v1.1` is the older sequential form (steps run in order). Both share the node kinds.
 * Node ids are short identifiers so they can be quoted in errors, diffs and step records without escaping.
 * Bounds keep a hostile definition from making a run or a diff walk an unbounded structure.
 */
/** YAML text beyond this is refused before parsing (a definition of MAX_NODES long prompts fits well within). */
export const MAX_DEFINITION_BYTES = 512 * 1024;
export const MAX_NODES = 200;
export const MAX_EDGES = 400;
export const MAX_LOOP_ITERATIONS = 100;
/** A wait longer than a week is a schedule, not a step. */
export const MAX_WAIT_SECONDS = 7 * 24 * 3600;

const nodeId = { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}$' } as const;

/**
 * A plugin verb as `<pluginId>.<verbId>`, with the id characters the daemon's option snapshots accept. Plugin ids
 * may be dotted (reverse-DNS names); verb ids may not, so the last dot separates the two unambiguously.
 */
export const PLUGIN_VERB_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}\\.[A-Za-z0-9][A-Za-z0-9_:@/-]{0,127}$';
const text = (max: number) => ({ type: 'string', minLength: 1, maxLength: max }) as const;

/** Bounds of a schedule trigger's catch-up window (seconds): a fire missed by more than this is skipped. */
export const MAX_CATCHUP_WINDOW_SECONDS = 24 * 3600;
export const DEFAULT_CATCHUP_WINDOW_SECONDS = 60;
/** The providers whose verified deliveries can start a run (the unified webhook ingest's four). */
export const WEBHOOK_TRIGGER_PROVIDERS = ['linear', 'github', 'circleci', 'vercel'] as const;
/** A webhook trigger's filter: payload paths (`issue.labels.*.name`) each with the value, or values, it must hold. */
export const MAX_FILTER_ENTRIES = 20;
const filterValue = { type: ['string', 'number', 'boolean'], maxLength: 500 } as const;

/**
 * The trigger (issue 17): `manual` starts runs only through `POST /runs`; `schedule` fires on a cron expression
 * (5 fields, or 6 with leading seconds) in an IANA time zone (UTC by default); `webhook` starts a run for each
 * verified delivery of `provider` whose event type is `event` and whose payload matches `filter`. The cron text
 * and the zone are checked beyond the schema when a definition is analysed (actors/kinds/workflow/trigger.ts).
 */
const trigger = {
  type: 'object',
  required: ['type'],
  discriminator: { propertyName: 'type' },
  oneOf: [
    { type: 'object', properties: { type: { const: 'manual' } }, additionalProperties: true },
    {
      type: 'object', required: ['type', 'cron'],
      properties: {
        type: { const: 'schedule' },
        cron: text(128),
        timezone: text(64),
        overlap: { enum: ['skip', 'allow'] },
        catchupWindowSeconds: { type: 'integer', minimum: 0, maximum: MAX_CATCHUP_WINDOW_SECONDS },
      },
      additionalProperties: false,
    },
    {
      type: 'object', required: ['type', 'provider', 'event'],
      properties: {
        type: { const: 'webhook' },
        provider: { enum: WEBHOOK_TRIGGER_PROVIDERS },
        event: text(128),
        // The priority of the sessions its runs dispatch from agent nodes that set none (decision 0085).
        priority: { type: 'integer', minimum: 0, maximum: 9 },
        filter: {
          type: 'object', maxProperties: MAX_FILTER_ENTRIES,
          propertyNames: { pattern: '^[A-Za-z0-9_*-]{1,64}(\\.[A-Za-z0-9_*-]{1,64}){0,9}$' },
          additionalProperties: { anyOf: [filterValue, { type: 'array', minItems: 1, maxItems: 50, items: filterValue }] },
        },
      },
      additionalProperties: false,
    },
  ],
} as const;

// `discriminator` makes ajv pick the branch by `kind`, so an error names the field that is wrong in that kind.
const nodeKinds = {
  type: 'object',
  required: ['kind'],
  discriminator: { propertyName: 'kind' },
  oneOf: [
    {
      type: 'object', required: ['id', 'kind', 'prompt'],
      // `repository`: the id, name or URL of a repository of the run's project, found when the node runs (decision 0075).
      properties: {
        id: nodeId, kind: { const: 'agent' }, prompt: text(20_000), name: text(200), provider: text(64), workType: text(64), agentCardId: text(128),
        repository: text(MAX_REPOSITORY_URL_LENGTH), ref: { ...text(MAX_REF_LENGTH), pattern: REF_PATTERN },
        // Offered before lower priorities (decision 0081); 5 when absent.
        priority: { type: 'integer', minimum: 0, maximum: 9 },
      },
      dependencies: { ref: ['repository'] },
      additionalProperties: false,
    },
    {
      type: 'object', required: ['id', 'kind', 'title'],
      // `onEscalate: live-session`: an escalate decision opens a session driven by the approver (decision 0069);
      // `prompt` is what that session is asked (the title when absent). `escalation` is the older spelling of `onEscalate`.
      properties: {
        id: nodeId, kind: { const: 'approval' }, title: text(500), name: text(200), requiredRole: { enum: ['owner', 'admin', 'member'] },
        onEscalate: { enum: ['live-session'] }, prompt: text(20_000), escalation: { enum: ['live-session'] },
      },
      additionalProperties: false,
    },
    {
      type: 'object', required: ['id', 'kind', 'when'],
      properties: { id: nodeId, kind: { const: 'condition' }, when: text(500), name: text(200) },
      additionalProperties: false,
    },
    {
      type: 'object', required: ['id', 'kind', 'maxIterations'],
      properties: { id: nodeId, kind: { const: 'loop' }, maxIterations: { type: 'integer', minimum: 1, maximum: MAX_LOOP_ITERATIONS }, name: text(200) },
      additionalProperties: false,
    },
    {
      type: 'object', required: ['id', 'kind', 'seconds'],
      properties: { id: nodeId, kind: { const: 'wait' }, seconds: { type: 'integer', minimum: 0, maximum: MAX_WAIT_SECONDS }, name: text(200) },
      additionalProperties: false,
    },
    {
      // A plugin verb snapshotted by a daemon; a run dispatches it as an agent session (actors/kinds/workflow/definition.ts).
      type: 'object', required: ['id', 'kind', 'verb'],
      properties: {
        id: nodeId, kind: { const: 'plugin' }, verb: { type: 'string', maxLength: 257, pattern: PLUGIN_VERB_PATTERN },
        options: { type: 'object', maxProperties: 50 }, prompt: text(20_000), name: text(200), provider: text(64), agentCardId: text(128),
      },
      additionalProperties: false,
    },
  ],
} as const;

const common = {
  schemaVersion: {},
  name: text(200),
  description: { type: 'string', maxLength: 5000 },
  trigger,
  providers: { type: 'array', maxItems: 50, items: text(64) },
  config: { type: 'object' },
} as const;

export const definitionV2Schema = {
  $id: 'troupe:workflow-definition:v2',
  type: 'object',
  required: ['schemaVersion', 'name', 'trigger', 'nodes'],
  properties: {
    ...common,
    schemaVersion: { const: 'v2' },
    nodes: { type: 'array', maxItems: MAX_NODES, items: nodeKinds },
    edges: {
      type: 'array', maxItems: MAX_EDGES,
      items: {
        type: 'object', required: ['source', 'target'],
        properties: { id: text(128), source: nodeId, target: nodeId, when: { type: 'boolean' } },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const;

export const definitionV11Schema = {
  $id: 'troupe:workflow-definition:v1.1',
  type: 'object',
  required: ['schemaVersion', 'name', 'trigger', 'steps'],
  properties: {
    ...common,
    schemaVersion: { const: 'v1.1' },
    steps: { type: 'array', maxItems: MAX_NODES, items: nodeKinds },
  },
  additionalProperties: false,
} as const;

/** A trigger as deployed: checked, defaults filled in (actors/kinds/workflow/trigger.ts `triggerOf`). */
export type OverlapPolicy = 'skip' | 'allow';
export type WebhookTriggerProvider = (typeof WEBHOOK_TRIGGER_PROVIDERS)[number];
export type FilterValue = string | number | boolean;

export type Trigger =
  | { readonly type: 'manual' }
  | {
      readonly type: 'schedule';
      readonly cron: string;
      readonly timezone: string;
      readonly overlap: OverlapPolicy;
      readonly catchupWindowSeconds: number;
    }
  | {
      readonly type: 'webhook';
      readonly provider: WebhookTriggerProvider;
      readonly event: string;
      readonly filter: Readonly<Record<string, FilterValue | readonly FilterValue[]>>;
      /** The priority of the sessions its runs' agent nodes dispatch when a node sets none (decision 0085). */
      readonly priority?: number;
    };

export type ScheduleTrigger = Extract<Trigger, { type: 'schedule' }>;
export type WebhookTrigger = Extract<Trigger, { type: 'webhook' }>;

export const definitionVersions = ['v1.1', 'v2'] as const;
export type DefinitionVersion = (typeof definitionVersions)[number];
