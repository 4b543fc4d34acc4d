import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Principal } from '../../actors/services/identity/principal.js';
import { templateAddress, type TemplateMsg, type TemplateView } from '../../actors/kinds/template/index.js';
import { analyseDefinition } from '../../actors/kinds/workflow/definition.js';
import { diffVersions } from '../../actors/kinds/workflow/diff.js';
import { findTemplate, templateVersions, type TemplateRow } from '../../storage/templates/templates.js';
import {
  publishTemplateBody, putTemplateBody, templateDiffReply, templateReply, templateSlugPattern, templateStateReply, TEMPLATE_SLUG_PATTERN,
} from '../../schemas/templates/templates.js';
import type { HttpRequest, Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';

/**
 * Workflow templates (CONTRACT "Templates", spec 9.3): admin-managed and draft-always. `PUT` edits the draft
 * (org admin or owner, Cedar `edit` on Template), `diff` compares the draft with the live version, `publish`
 * freezes the draft into the next immutable version (Cedar `publish`). Human principals only: the edge answers
 * API keys, machine and runtime tokens 403. Tenant-private: another org's slug, like an unknown one, is 404.
 */

type UserPrincipal = Extract<Principal, { kind: 'user' }>;

function humanOf(p: Principal): UserPrincipal {
  if (p.kind !== 'user') throw new TroupeError('AUTH_HUMAN_ONLY');
  return p;
}

/** A slug that cannot exist is simply not found (reads) … */
function slugOf(req: HttpRequest): string {
  const slug = req.params.slug ?? '';
  if (!templateSlugPattern.test(slug)) throw new TroupeError('NOT_FOUND', 'template not found');
  return slug;
}

async function scopedTemplate(deps: Deps, orgId: string, slug: string): Promise<TemplateRow> {
  const template = await findTemplate(deps.db, orgId, slug);
  if (!template) throw new TroupeError('NOT_FOUND', 'template not found');
  return template;
}

const resource = (orgId: string, slug: string) => ({ type: 'Template', id: slug, orgId }) as const;

/** `action` on the template `:slug` names; Cedar decides before the template is looked up (reads of an unknown one are 404 after). */
const onTemplate = (action: 'read' | 'publish'): RouteAuthorization<Deps, any, { p: UserPrincipal; slug: string }> => ({
  find: async (req, _deps, p) => ({ p: humanOf(p), slug: slugOf(req) }),
  action,
  resource: (_req, _p, { p, slug }) => resource(p.orgId, slug),
});

export function templateRoutes(): Route<Deps>[] {
  return [...templateReadWriteRoutes(), ...templatePublishingRoutes()];
}

function templateReadWriteRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get',
      path: '/api/templates/:slug',
      auth: 'human',
      summary: 'A workflow template: its current draft ({template}) plus its published versions, newest first ({versions})',
      tags: ['templates'],
      responseSchema: templateReply,
      authorize: onTemplate('read'),
      async handler(_req, deps, { found: { p, slug } }) {
        const template = await scopedTemplate(deps, p.orgId, slug);
        const versions = await templateVersions(deps.db, p.orgId, slug);
        const live = versions.find((v) => v.version === template.liveVersion);
        const { orgId: _org, ...draft } = template;
        return {
          body: {
            template: {
              ...draft,
              hasUnpublishedChanges: !live || live.name !== template.name || live.description !== template.description || live.definitionYaml !== template.definitionYaml,
            },
            versions,
          },
        };
      },
    }),
    route({
      method: 'put',
      path: '/api/templates/:slug',
      auth: 'human',
      summary: `Create or edit a template's draft (org admin or owner); the live version is untouched until publish. Slug: ${TEMPLATE_SLUG_PATTERN}. 201 when created, 409 when expectedRevision is stale`,
      tags: ['templates'],
      bodySchema: putTemplateBody,
      responseSchema: templateStateReply,
      authorize: {
        async find(req, _deps, p) {
          const human = humanOf(p);
          const slug = req.params.slug ?? '';
          if (!templateSlugPattern.test(slug)) {
            throw new TroupeError('VALIDATION_FAILED', `field 'slug' must match ${TEMPLATE_SLUG_PATTERN}`, { field: 'slug' });
          }
          return { p: human, slug };
        },
        action: 'edit',
        resource: (_req, _p, { p, slug }) => resource(p.orgId, slug),
      },
      async handler(req, deps, { found: { p, slug } }) {
        const body = req.body;
        // Drafts are validated like workflow saves, so whatever is published is a definition runs can execute.
        analyseDefinition(body.definitionYaml);
        const message: TemplateMsg = {
          type: 'template.saveDraft', orgId: p.orgId, slug, by: `user:${p.userId}`,
          content: { name: body.name, description: body.description ?? '', definitionYaml: body.definitionYaml },
          ...(body.expectedRevision === undefined ? {} : { expectedRevision: body.expectedRevision }),
        };
        const view = await deps.ask<TemplateView>(templateAddress(p.orgId, slug), message);
        const { created, ...rest } = view;
        return { status: created ? 201 : 200, body: rest };
      },
    }),
  ];
}

function templatePublishingRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get',
      path: '/api/templates/:slug/diff',
      auth: 'human',
      summary: 'What publishing would change: the draft against the live version (everything is added before the first publish)',
      tags: ['templates'],
      responseSchema: templateDiffReply,
      authorize: onTemplate('read'),
      async handler(_req, deps, { found: { p, slug } }) {
        const template = await scopedTemplate(deps, p.orgId, slug);
        const live = template.liveVersion === null
          ? undefined
          : (await templateVersions(deps.db, p.orgId, slug, 1)).find((v) => v.version === template.liveVersion);
        const draftPlan = analyseDefinition(template.definitionYaml).plan;
        const livePlan = live ? analyseDefinition(live.definitionYaml).plan : { nodes: [], edges: [] };
        const { fromVersion: _f, toVersion: _t, ...changes } = diffVersions(
          { version: template.liveVersion ?? 0, nodes: livePlan.nodes, edges: livePlan.edges, definitionYaml: live?.definitionYaml ?? '' },
          { version: (template.liveVersion ?? 0) + 1, nodes: draftPlan.nodes, edges: draftPlan.edges, definitionYaml: template.definitionYaml },
        );
        const nameChanged = live?.name !== template.name;
        const descriptionChanged = live?.description !== template.description;
        return {
          body: {
            slug, liveVersion: template.liveVersion, draftRevision: template.draftRevision,
            changed: nameChanged || descriptionChanged || changes.yamlChanged,
            nameChanged, descriptionChanged, ...changes,
          },
        };
      },
    }),
    route({
      method: 'post',
      path: '/api/templates/:slug/publish',
      auth: 'human',
      summary: 'Publish the draft as the next immutable version, which becomes live (org admin or owner); 409 when the draft equals the live version',
      tags: ['templates'],
      bodySchema: publishTemplateBody,
      responseSchema: templateStateReply,
      authorize: onTemplate('publish'),
      async handler(req, deps, { found: { p, slug } }) {
        await scopedTemplate(deps, p.orgId, slug);
        const changeReason = req.body?.changeReason ?? null;
        const view = await deps.ask<TemplateView>(templateAddress(p.orgId, slug), {
          type: 'template.publish', orgId: p.orgId, by: `user:${p.userId}`, changeReason,
        } satisfies TemplateMsg);
        const { created: _created, ...rest } = view;
        return { body: rest };
      },
    }),
  ];
}
