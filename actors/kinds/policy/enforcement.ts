import type { Knex } from 'knex';
import type { Unsubscribe } from '../../../transport/port.js';
import type { Deps } from '../../services/deps.js';
import type { NodeService } from '../../services/node-service.js';
import type { Clock } from '../../../ops/kernel/clock.js';
import { activePolicies } from '../../../storage/governance/policies.js';
import { enforcementText } from './cedar-text.js';

/**
 * Feeds the Cedar authorizer's `extraPolicies(orgId, projectId?)`: the active stored policies of the org
 * (workspace scope) and of the resource's project (project scope), as one Cedar text with explaining ids.
 *
 * Authorization runs on every request, so the text is memoised per (org, project). A policy write publishes
 * `governance.policy.changed` and every node drops that org's entries at once; the TTL bounds staleness should an
 * event be lost (the transport's fan-out is at-most-once to subscribers).
 */
export const POLICY_CHANGED_TOPIC = 'governance.policy.changed';
/** The longest a node may enforce a superseded policy set if an invalidation event is lost. */
const MEMO_TTL_MS = 5_000;
const MEMO_ENTRIES = 10_000;
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class StoredPolicySource implements NodeService {
  readonly name = 'stored-policies';
  private readonly memo = new Map<string, { text: string; expiresAt: number; generation: number }>();
  private readonly generations = new Map<string, number>();
  private unsubscribe: Unsubscribe | undefined;

  constructor(private readonly db: Knex, private readonly clock: Clock) {}

  /** Listens for policy changes made on any node. */
  async start(deps: Pick<Deps, 'transport'>): Promise<void> {
    this.unsubscribe = await deps.transport.subscribe(POLICY_CHANGED_TOPIC, (_topic, event) => {
      const orgId = (event as { orgId?: unknown } | null)?.orgId;
      if (typeof orgId === 'string') this.invalidate(orgId);
    });
  }

  /** The Cedar text to join to the defaults for a decision on a resource of this org and project. */
  async textFor(orgId: string, projectId?: string): Promise<string> {
    // Ids reach here from authenticated principals and resources; anything else has no stored policies.
    if (!uuidPattern.test(orgId)) return '';
    const project = projectId !== undefined && uuidPattern.test(projectId) ? projectId : undefined;
    const key = `${orgId}:${project ?? ''}`;
    const now = this.clock.now();
    const generation = this.generations.get(orgId) ?? 0;
    const hit = this.memo.get(key);
    if (hit && hit.expiresAt > now && hit.generation === generation) return hit.text;
    const text = enforcementText(await activePolicies(this.db, orgId, project));
    // A change that landed while we were reading bumps the generation: keep the answer out of the memo.
    if ((this.generations.get(orgId) ?? 0) === generation) {
      this.memo.set(key, { text, expiresAt: now + MEMO_TTL_MS, generation });
      if (this.memo.size > MEMO_ENTRIES) this.memo.delete(this.memo.keys().next().value as string);
    }
    return text;
  }

  invalidate(orgId: string): void {
    this.generations.set(orgId, (this.generations.get(orgId) ?? 0) + 1);
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
    this.unsubscribe = undefined;
  }
}

/**
 * Tells every node that an org's stored policies changed. The node that served the write drops its memo at once,
 * before it answers, so its own next decision already sees the change (event fan-out is asynchronous even locally);
 * the others hear it through the transport.
 */
export async function announcePolicyChange(deps: Pick<Deps, 'transport' | 'services'>, orgId: string): Promise<void> {
  deps.services.policies.invalidate(orgId);
  await deps.transport.publish(POLICY_CHANGED_TOPIC, { orgId });
}
