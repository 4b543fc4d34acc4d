/**
 * The whole transcript of a session (issue 35 §1): its entries, the page reply, the follow stream's event, and the
 * org settings that bound how long transcripts are kept. Components of the OpenAPI document.
 */
export const TRANSCRIPT_PAGE_MAX = 1000;
export const TRANSCRIPT_PAGE_DEFAULT = 200;

export const transcriptEntrySchema = {
  type: 'object',
  required: ['seq', 'at', 'kind', 'text', 'run'],
  description: 'One entry. `seq` numbers the entries of one session from 1 without gaps; the members after `run` depend on the kind.',
  properties: {
    seq: { type: 'integer', minimum: 1 },
    at: { type: 'string', format: 'date-time', description: 'When it happened (an output line: when the node took it in)' },
    kind: {
      enum: ['output', 'prompt', 'tool', 'status', 'notice'],
      description: '`output`: a line the agent wrote (without its newline); `prompt`: a prompt sent to the session; `tool`: a tool '
        + 'step (`<tool>: <summary>`); `status`: a status change (`from → to`); `notice`: what the server says about the session '
        + 'or the transcript itself (why it stopped a run, where the size limit cut the output)',
    },
    text: { type: 'string' },
    run: { type: ['integer', 'null'], description: 'The run (epoch) it belongs to; a terminal session prompted again starts the next' },
    status: { type: 'string', description: '`status` entries: the new status' },
    previousStatus: { type: 'string', description: '`status` entries' },
    workerId: { type: 'string', description: '`status` entries: the worker holding the session, when one does' },
    promptId: { type: 'string', description: '`prompt` entries' },
    queued: { type: 'boolean', description: '`prompt` entries: sent to a live agent (true) or starting a run (false)' },
    tool: { type: 'string', description: '`tool` entries: the tool\'s name' },
    stepId: { type: 'string', description: '`tool` entries: the step\'s own id, when the worker sent one' },
    stopReason: { type: 'string', description: '`notice` entries of a run the server stopped: why (`budget`, `superseded`), with its figures beside' },
  },
} as const;

export const transcriptPageReply = {
  type: 'object',
  required: ['entries', 'next', 'lastSeq', 'purgedThrough', 'cut'],
  properties: {
    entries: { type: 'array', maxItems: TRANSCRIPT_PAGE_MAX, items: transcriptEntrySchema },
    next: {
      type: ['integer', 'null'],
      description: 'The `after` of the next page while more entries are stored; null when this page reached the end (a live '
        + 'session writes more later: read again after the last `seq`, or follow the stream from it)',
    },
    lastSeq: { type: 'integer', description: 'The newest entry\'s seq when this was read (0: no entries yet)' },
    purgedThrough: { type: 'integer', description: 'Entries up to this seq were deleted by the org\'s retention (0: none)' },
    cut: {
      type: ['object', 'null'], required: ['atSeq', 'droppedEntries', 'droppedBytes'],
      description: 'Set when the transcript reached TROUPE_TRANSCRIPT_MAX_BYTES: the seq of the notice that ends it, and what was not kept since',
      properties: { atSeq: { type: 'integer' }, droppedEntries: { type: 'integer' }, droppedBytes: { type: 'integer' } },
    },
  },
} as const;

export const transcriptQuery = {
  type: 'object', additionalProperties: false,
  properties: {
    after: { type: 'string', pattern: '^(0|[1-9][0-9]{0,14})$', description: 'Entries with a greater seq (default 0: from the start)' },
    limit: { type: 'string', pattern: '^[0-9]{1,7}$', description: `Page size, 1-${TRANSCRIPT_PAGE_MAX} (default ${TRANSCRIPT_PAGE_DEFAULT})` },
    q: { type: 'string', minLength: 1, maxLength: 200, description: 'Only entries whose text contains this (any case)' },
    format: { enum: ['json', 'ndjson'], description: '`ndjson`: every entry after `after`, one JSON object a line, streamed (a download); takes no `limit` or `q`' },
  },
} as const;

export const transcriptStreamQuery = {
  type: 'object', additionalProperties: false,
  properties: {
    after: { type: 'string', pattern: '^(0|[1-9][0-9]{0,14})$', description: 'Start after this seq (default 0); `Last-Event-ID` (a seq) overrides it' },
  },
} as const;

export const orgSettingsReply = {
  type: 'object', required: ['orgId', 'transcriptRetentionDays', 'updatedAt', 'updatedBy'],
  properties: {
    orgId: { type: 'string', format: 'uuid' },
    transcriptRetentionDays: {
      type: 'integer', minimum: 0,
      description: 'Days a session\'s transcript is kept after its last entry (0: forever; 30 until set)',
    },
    updatedAt: { type: ['string', 'null'], format: 'date-time' },
    updatedBy: { type: ['string', 'null'] },
  },
} as const;

export const orgSettingsBody = {
  type: 'object', additionalProperties: false, minProperties: 1,
  properties: {
    transcriptRetentionDays: { type: 'integer', minimum: 0, maximum: 36500, description: '0 keeps transcripts forever' },
  },
} as const;
