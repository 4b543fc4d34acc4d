import { accept, reject } from '../../runtime/machine.js';
import { defineMachine, go, type Take } from '../../runtime/define-machine.js';

/**
 * An admin-managed workflow template (`template/<orgId>:<slug>`), spec 9.3: unlike workflows, a template is
 * draft-always. Edits only ever change the draft; `publish` freezes the draft into the next immutable version,
 * which becomes live. Statuses:
 * - absent:  no template under this slug in this org (the initial state).
 * - present: a draft exists; `liveVersion` is null until the first publish.
 * The actor id carries the org, so one org's slug never names another org's template.
 */
export const templateStatuses = ['absent', 'present'] as const;
export type TemplateStatus = (typeof templateStatuses)[number];

export interface TemplateContent {
  readonly name: string;
  readonly description: string;
  readonly definitionYaml: string;
}

export interface PresentTemplate {
  readonly status: 'present';
  readonly orgId: string;
  readonly slug: string;
  readonly draft: TemplateContent;
  /** Counts saved edits of the draft; an editor names the one it started from to avoid lost updates. */
  readonly draftRevision: number;
  readonly draftUpdatedAt: string;
  readonly draftUpdatedBy: string;
  /** Null until the first publish. */
  readonly liveVersion: number | null;
  readonly live: TemplateContent | null;
  readonly createdAt: string;
}
export type TemplateState = { readonly status: 'absent' } | PresentTemplate;

export type TemplateMsg =
  | {
      readonly type: 'template.saveDraft'; readonly orgId: string; readonly slug: string; readonly content: TemplateContent;
      readonly by: string; readonly expectedRevision?: number;
    }
  | { readonly type: 'template.publish'; readonly orgId: string; readonly by: string; readonly changeReason: string | null };
export type TemplateMsgType = TemplateMsg['type'];
export const templateMsgTypes: readonly TemplateMsgType[] = ['template.saveDraft', 'template.publish'];

export type TemplateEffect =
  | { readonly type: 'draftSaved' }
  | {
      readonly type: 'versionPublished'; readonly version: number; readonly content: TemplateContent; readonly publishedBy: string;
      readonly changeReason: string | null; readonly publishedAt: string;
    };

export interface TemplateView {
  readonly slug: string;
  readonly draftRevision: number;
  readonly liveVersion: number | null;
  readonly created: boolean;
}

export const initialTemplateState = (): TemplateState => ({ status: 'absent' });

type On<T extends TemplateMsgType, To, In = PresentTemplate> =
  Take<TemplateState, Extract<TemplateMsg, { type: T }>, TemplateEffect, TemplateView, TemplateStatus, To, In>;

const sameContent = (a: TemplateContent | null, b: TemplateContent): boolean =>
  a !== null && a.name === b.name && a.description === b.description && a.definitionYaml === b.definitionYaml;

const viewOf = (t: PresentTemplate, created = false): TemplateView =>
  ({ slug: t.slug, draftRevision: t.draftRevision, liveVersion: t.liveVersion, created });

const iso = (ms: number): string => new Date(ms).toISOString();

const createDraft: On<'template.saveDraft', 'present', { status: 'absent' }> = (_state, msg, { now, to }) => {
  if (msg.expectedRevision !== undefined && msg.expectedRevision !== 0) {
    return reject('CONFLICT', 'the template does not exist yet (expectedRevision must be 0 or absent)');
  }
  const created: PresentTemplate = {
    status: to, orgId: msg.orgId, slug: msg.slug, draft: msg.content, draftRevision: 1, draftUpdatedAt: iso(now),
    draftUpdatedBy: msg.by, liveVersion: null, live: null, createdAt: iso(now),
  };
  return accept(created, viewOf(created, true), [{ type: 'draftSaved' }]);
};

/** An editor names the revision it started from, so a save over someone else's lost update is refused. */
const saveDraft: On<'template.saveDraft', TemplateStatus> = (state, msg, { now }) => {
  if (msg.expectedRevision !== undefined && msg.expectedRevision !== state.draftRevision) {
    return reject('CONFLICT', `the draft changed since revision ${msg.expectedRevision} (now ${state.draftRevision})`, { draftRevision: state.draftRevision });
  }
  if (sameContent(state.draft, msg.content)) return accept(state, viewOf(state));
  const next: PresentTemplate = {
    ...state, draft: msg.content, draftRevision: state.draftRevision + 1, draftUpdatedAt: iso(now), draftUpdatedBy: msg.by,
  };
  return accept(next, viewOf(next), [{ type: 'draftSaved' }]);
};

/** Freezes the draft into the next immutable version, which becomes live. */
const publish: On<'template.publish', TemplateStatus> = (state, msg, { now }) => {
  if (sameContent(state.live, state.draft)) return reject('CONFLICT', 'the draft has no changes against the live version');
  const version = (state.liveVersion ?? 0) + 1;
  const next: PresentTemplate = { ...state, liveVersion: version, live: state.draft };
  return accept(next, viewOf(next), [
    { type: 'draftSaved' },
    { type: 'versionPublished', version, content: state.draft, publishedBy: msg.by, changeReason: msg.changeReason, publishedAt: iso(now) },
  ]);
};

export const templateMachine = defineMachine<TemplateState, TemplateMsg, TemplateEffect, TemplateView, TemplateStatus>({
  statuses: templateStatuses,
  messageTypes: templateMsgTypes,
  statusOf: (state) => state.status,
  // Defence in depth: the id already names the org, a message naming another one is about some other template.
  screen: (state, msg) => (state.status === 'present' && state.orgId !== msg.orgId ? reject('NOT_FOUND', 'template not found') : undefined),
  refuse: () => reject('NOT_FOUND', 'template not found'),
  table: {
    absent: { 'template.saveDraft': go('present', createDraft) },
    present: { 'template.saveDraft': go('present', saveDraft), 'template.publish': go('present', publish) },
  },
});
