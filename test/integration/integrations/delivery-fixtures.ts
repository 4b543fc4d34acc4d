import { expect } from 'chai';
import type { TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import type { Org } from '../agents/fixtures.js';
import { findWebhookEvent } from '../../../storage/integrations/webhook-events.js';

/** Set-up shared by the provider delivery suites: a session for a delivery to name, and what it then shows. */

export async function dispatchSession(t: TestNode, o: Org, prompt = 'fix the build'): Promise<string> {
  const projects = await t.node.deps.db('projects').where({ org_id: o.orgId }).select('id');
  const r = await t.call('POST', '/api/agent-dispatch', { token: o.apiKey, body: { projectId: projects[0].id, prompt } });
  expect(r.status, r.text).to.equal(201);
  return r.json.sessionId as string;
}

/** The session's activities as its org reads them through the public detail route, optionally of one kind. */
export async function sessionActivities(t: TestNode, o: Org, sessionId: string, kind?: string): Promise<{ id: string; kind: string; body: string }[]> {
  const r = await t.call('GET', `/api/public/sessions/${sessionId}`, { token: o.apiKey });
  expect(r.status, r.text).to.equal(200);
  return (r.json.activities as { id: string; kind: string; body: string }[]).filter((a) => kind === undefined || a.kind === kind);
}

/** Resolves once the stored delivery has left its pending state, whichever way it went. */
export const deliverySettled = (t: TestNode, orgId: string, eventId: string) =>
  eventually(async () => ['routed', 'ignored', 'failed'].includes((await findWebhookEvent(t.node.deps.db, orgId, eventId))?.status ?? ''), 'delivery settled');
