import type { Knex } from 'knex';
import type { ActorBehavior } from '../../runtime/machine.js';
import { templateMessageSchema } from '../../../schemas/templates/templates.js';
import { insertTemplateVersion, writeTemplateDraft } from '../../../storage/templates/templates.js';
import { analyseDefinition } from '../workflow/definition.js';
import { templateMachine, initialTemplateState, type TemplateEffect, type TemplateMsg, type TemplateState, type TemplateView } from './machine.js';

/**
 * The template actor: the pure machine of ./machine.ts plus its projection. The draft row, a published version
 * and its audit entry commit with the snapshot, so what the routes read never disagrees with what was answered.
 */
export const TEMPLATE_KIND = 'template';
/** One actor per (org, slug); the org in the id keeps tenants apart even when they choose the same slug. */
export const templateAddress = (orgId: string, slug: string): string => `${TEMPLATE_KIND}/${orgId}:${slug}`;

export function createTemplateBehavior(): ActorBehavior<TemplateState, TemplateMsg, TemplateView, TemplateEffect> {
  return {
    kind: TEMPLATE_KIND,
    initial: initialTemplateState,
    machine: templateMachine,
    messages: templateMessageSchema,
    async project(trx: Knex.Transaction, _id: string, next: TemplateState, _previous: TemplateState, effects: readonly TemplateEffect[]) {
      if (next.status !== 'present') return;
      for (const effect of effects) {
        switch (effect.type) {
          case 'draftSaved':
            await writeTemplateDraft(trx, {
              orgId: next.orgId, slug: next.slug, name: next.draft.name, description: next.draft.description,
              definitionYaml: next.draft.definitionYaml, draftRevision: next.draftRevision, draftUpdatedAt: next.draftUpdatedAt,
              draftUpdatedBy: next.draftUpdatedBy, liveVersion: next.liveVersion, createdAt: next.createdAt,
            });
            break;
          case 'versionPublished': {
            // The draft was validated when it was saved; this only derives the recorded schema facts.
            const analysed = analyseDefinition(effect.content.definitionYaml);
            await insertTemplateVersion(trx, next.orgId, next.slug, {
              version: effect.version, name: effect.content.name, description: effect.content.description,
              definitionYaml: effect.content.definitionYaml, definitionVersion: analysed.definitionVersion,
              schemaHash: analysed.schemaHash, publishedBy: effect.publishedBy, changeReason: effect.changeReason,
              publishedAt: effect.publishedAt,
            });
            break;
          }
        }
      }
    },
  };
}
