import type { Logger } from '../../ops/kernel/logger.js';
import { managementCall, type ManagementApi } from './management-api.js';
import type { TopologyNames } from './topology.js';

/**
 * Queues declared before decision 0048 lack the arguments that make dead-lettering at-least-once and bound the
 * dead-letter queue, and queue arguments cannot change once declared (re-declaring answers 406). RabbitMQ policies
 * can: these two give such queues what they lack, and apply to new queues too, where they repeat the arguments.
 * The node puts them through the management API when it finds an older queue; without that API an operator runs
 * the `rabbitmqctl` lines `policyCommands` prints (README, "Dead letters").
 */

export interface PolicySpec {
  readonly name: string;
  readonly pattern: string;
  readonly definition: Readonly<Record<string, unknown>>;
}

/**
 * Above the default 0, so an operator's catch-all policy does not hide these; RabbitMQ applies one policy per queue
 * (the highest priority), so an operator's own policy for these queues must carry these keys too.
 */
export const DEAD_LETTER_POLICY_PRIORITY = 10;

export function deadLetterPolicies(prefix: string, names: TopologyNames, deliveryLimit: number, bound: number): PolicySpec[] {
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return [
    {
      name: `${prefix}.shard-dead-lettering`,
      pattern: `^${escaped}\\.shard\\.[0-9]+$`,
      // For quorum queues the lower of the argument and the policy's delivery-limit applies, so this also brings
      // an older queue's limit of 5 returns down to this one's.
      definition: { 'dead-letter-strategy': 'at-least-once', overflow: 'reject-publish', 'delivery-limit': deliveryLimit },
    },
    {
      name: `${prefix}.dead-letter-bound`,
      pattern: `^${names.deadLetterQueue.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`,
      definition: { 'max-length': bound, overflow: 'reject-publish' },
    },
  ];
}

export async function applyPolicies(api: ManagementApi, policies: readonly PolicySpec[]): Promise<void> {
  for (const policy of policies) {
    await managementCall(api, 'PUT', `/api/policies/{vhost}/${encodeURIComponent(policy.name)}`, {
      pattern: policy.pattern, 'apply-to': 'queues', priority: DEAD_LETTER_POLICY_PRIORITY, definition: policy.definition,
    });
  }
}

/** Tests and benchmarks remove what their prefix left; a policy that is not there is not an error. */
export async function removePolicies(api: ManagementApi, policies: readonly PolicySpec[]): Promise<void> {
  for (const policy of policies) {
    await managementCall(api, 'DELETE', `/api/policies/{vhost}/${encodeURIComponent(policy.name)}`).catch((err: Error) => {
      if (!/ 404/.test(err.message)) throw err;
    });
  }
}

/** The lines an operator runs where the node cannot reach the management API. */
export function policyCommands(vhost: string, policies: readonly PolicySpec[]): string[] {
  return policies.map(
    (p) => `rabbitmqctl set_policy -p '${vhost}' --apply-to queues --priority ${DEAD_LETTER_POLICY_PRIORITY} '${p.name}' '${p.pattern}' '${JSON.stringify(p.definition)}'`,
  );
}

/** What a queue runs with: its arguments, and its policy's keys where the arguments lack them (x- prefix dropped). */
export async function queueSettings(api: ManagementApi, queue: string): Promise<Record<string, unknown>> {
  const row = (await managementCall(api, 'GET', `/api/queues/{vhost}/${encodeURIComponent(queue)}`)) as {
    arguments?: Record<string, unknown>; effective_policy_definition?: Record<string, unknown> | unknown[];
  };
  const settings: Record<string, unknown> = {};
  const policy = row.effective_policy_definition;
  if (policy && !Array.isArray(policy)) Object.assign(settings, policy);
  for (const [key, value] of Object.entries(row.arguments ?? {})) {
    const name = key.replace(/^x-/, '');
    // The lower of the two delivery limits and max lengths applies; for the other keys, the argument.
    if ((name === 'delivery-limit' || name === 'max-length') && typeof settings[name] === 'number') settings[name] = Math.min(settings[name] as number, value as number);
    else settings[name] = value;
  }
  return settings;
}

/** At-least-once needs both: RabbitMQ falls back to at-most-once, with a warning in its log, otherwise. */
export function atLeastOnce(settings: Readonly<Record<string, unknown>>): boolean {
  return settings['dead-letter-strategy'] === 'at-least-once' && settings.overflow === 'reject-publish';
}

/**
 * Gives older queues the policies and checks they took (the broker applies a policy asynchronously). Answers
 * whether every one of `predating` now dead-letters at least once and the dead-letter queue is bounded.
 */
export async function upgradeOlderQueues(
  api: ManagementApi, policies: readonly PolicySpec[], predating: readonly string[], deadLetterQueue: string, log: Logger,
  timeoutMs = 10_000,
): Promise<boolean> {
  await applyPolicies(api, policies);
  const until = Date.now() + timeoutMs;
  for (;;) {
    const pending: string[] = [];
    for (const queue of predating) {
      const settings = await queueSettings(api, queue);
      const ok = queue === deadLetterQueue ? typeof settings['max-length'] === 'number' && settings.overflow === 'reject-publish' : atLeastOnce(settings);
      if (!ok) pending.push(queue);
    }
    if (pending.length === 0) return true;
    if (Date.now() > until) {
      log.error({ queues: pending }, 'the dead-letter policies did not take on these queues (another policy of higher priority matches them?)');
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
