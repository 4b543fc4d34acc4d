import { accept, allows, reject, type DecideContext, type Decision, type Machine, type TransitionTable } from '../runtime/machine.js';

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

export const templateTransitions: TransitionTable<TemplateStatus, TemplateMsgType> = {
  absent: { 'template.saveDraft': ['present'] },
  present: { 'template.saveDraft': ['present'], 'template.publish': ['present'] },
};

export const initialTemplateState = (): TemplateState => ({ status: 'absent' });

type D = Decision<TemplateState, TemplateEffect, TemplateView>;

const sameContent = (a: TemplateContent | null, b: TemplateContent): boolean =>
  a !== null && a.name === b.name && a.description === b.description && a.definitionYaml === b.definitionYaml;

const viewOf = (t: PresentTemplate, created = false): TemplateView =>
  ({ slug: t.slug, draftRevision: t.draftRevision, liveVersion: t.liveVersion, created });

export function decideTemplate(state: TemplateState, msg: TemplateMsg, ctx: DecideContext): D {
  if (!allows(templateTransitions, state.status, msg.type)) return reject('NOT_FOUND', 'template not found');
  // Defence in depth: the id already names the org, a message naming another one is about some other template.
  if (state.status === 'present' && state.orgId !== msg.orgId) return reject('NOT_FOUND', 'template not found');
  const now = new Date(ctx.now).toISOString();

  switch (msg.type) {
    case 'template.saveDraft': {
      if (state.status === 'absent') {
        if (msg.expectedRevision !== undefined && msg.expectedRevision !== 0) {
          return reject('CONFLICT', 'the template does not exist yet (expectedRevision must be 0 or absent)');
        }
        const created: PresentTemplate = {
          status: 'present', orgId: msg.orgId, slug: msg.slug, draft: msg.content, draftRevision: 1, draftUpdatedAt: now,
          draftUpdatedBy: msg.by, liveVersion: null, live: null, createdAt: now,
        };
        return accept(created, viewOf(created, true), [{ type: 'draftSaved' }]);
      }
      if (msg.expectedRevision !== undefined && msg.expectedRevision !== state.draftRevision) {
        return reject('CONFLICT', `the draft changed since revision ${msg.expectedRevision} (now ${state.draftRevision})`, { draftRevision: state.draftRevision });
      }
      if (sameContent(state.draft, msg.content)) return accept(state, viewOf(state));
      const next: PresentTemplate = {
        ...state, draft: msg.content, draftRevision: state.draftRevision + 1, draftUpdatedAt: now, draftUpdatedBy: msg.by,
      };
      return accept(next, viewOf(next), [{ type: 'draftSaved' }]);
    }

    case 'template.publish': {
      if (state.status === 'absent') return reject('NOT_FOUND', 'template not found');
      if (sameContent(state.live, state.draft)) return reject('CONFLICT', 'the draft has no changes against the live version');
      const version = (state.liveVersion ?? 0) + 1;
      const next: PresentTemplate = { ...state, liveVersion: version, live: state.draft };
      return accept(next, viewOf(next), [
        { type: 'draftSaved' },
        { type: 'versionPublished', version, content: state.draft, publishedBy: msg.by, changeReason: msg.changeReason, publishedAt: now },
      ]);
    }
  }
}

export const templateMachine: Machine<TemplateState, TemplateMsg, TemplateEffect, TemplateView, TemplateStatus> = {
  statuses: templateStatuses, messageTypes: templateMsgTypes, transitions: templateTransitions, statusOf: (state) => state.status, decide: decideTemplate,
};
