import type { Knex } from 'knex';
import type { ActorBehavior } from '../../runtime/machine.js';
import { withAnnouncement } from '../../runtime/announce.js';
import type { Transport } from '../../../transport/port.js';
import { PENDING_TOPIC, type PendingEvent } from '../../services/daemon/pending-index.js';
import { daemonHostMessageSchema } from '../../../schemas/sessions/daemon.js';
import { insertMutation, markMutationCancelled, markMutationsDelivered, upsertWorker } from '../../../storage/sessions/daemon.js';
import { publishRevocation, tags } from '../../services/identity/revocation.js';
import {
  authorisedProjects, daemonHostMachine, initialDaemonHostState,
  type DaemonHostEffect, type DaemonHostMsg, type DaemonHostReply, type DaemonHostState,
} from './machine.js';

/**
 * The daemon-host actor: the machine of ./machine.ts plus its read models (daemon_workers, daemon_mutations),
 * written in the snapshot transaction, so a delivery is durable (deliveredAt stamped) before the heartbeat that
 * carries it is answered.
 */
export const DAEMON_HOST_KIND = 'daemon-host';

export interface DaemonHostPorts {
  /** Where the pending count is announced after every durable change of it (`daemon.pending`, every node). */
  readonly transport?: Pick<Transport, 'publish'>;
}

/**
 * With a transport, every durable change of the pending queue (enqueue, deliver, cancel) is announced on
 * `daemon.pending`, which keeps each node's pending index exact (./pending-index.ts), so heartbeats of workers with
 * nothing pending never ask this actor.
 */
export function createDaemonHostBehavior(ports: DaemonHostPorts = {}): ActorBehavior<DaemonHostState, DaemonHostMsg, DaemonHostReply, DaemonHostEffect> {
  const behavior = daemonHostBehavior();
  const { transport } = ports;
  if (!transport) return behavior;
  // A worker whose projects changed is re-read by every node's authenticator before its next request is trusted.
  const revoking = withAnnouncement(behavior, {
    effectType: 'daemonHost.projectsRevoked',
    announce: (previous, next, workerId): string | undefined =>
      authorisedProjects(previous).join() === authorisedProjects(next).join() ? undefined : workerId,
    deliver: (workerId) => publishRevocation(transport, [tags.worker(workerId)]),
  });
  return withAnnouncement(revoking, {
    effectType: 'daemonHost.pendingAnnounce',
    announce: (previous, next, workerId): PendingEvent | undefined =>
      previous.pending.length === next.pending.length ? undefined : { workerId, pending: next.pending.length },
    deliver: (event) => transport.publish(PENDING_TOPIC, event),
  });
}

function daemonHostBehavior(): ActorBehavior<DaemonHostState, DaemonHostMsg, DaemonHostReply, DaemonHostEffect> {
  return {
    kind: DAEMON_HOST_KIND,
    initial: initialDaemonHostState,
    machine: daemonHostMachine,
    messages: daemonHostMessageSchema,
    async project(trx: Knex.Transaction, workerId: string, next: DaemonHostState, previous: DaemonHostState, effects: readonly DaemonHostEffect[]) {
      const orgId = next.orgId!;
      for (const effect of effects) {
        switch (effect.type) {
          case 'workerRegistered':
            await upsertWorker(trx, {
              id: workerId, orgId, registrationId: next.registrationId!, hostname: next.hostname, maxAgents: next.maxAgents,
              projectIds: next.projectIds, registeredAt: next.registeredAt,
            });
            break;
          case 'mutationEnqueued':
            await insertMutation(trx, { ...effect.mutation, orgId, workerHostId: workerId });
            break;
          case 'mutationsDelivered':
            await markMutationsDelivered(trx, effect.ids, effect.at);
            break;
          case 'mutationCancelled':
            await markMutationCancelled(trx, effect.id, effect.at);
            break;
        }
      }
      // What the authenticator reads for this worker's runtime tokens: a removal counts from the moment it is asked.
      const projects = authorisedProjects(next);
      if (effects.some((e) => e.type !== 'workerRegistered') && projects.join() !== authorisedProjects(previous).join()) {
        await trx('daemon_workers').where({ id: workerId }).update({ project_ids: JSON.stringify(projects) });
      }
    },
  };
}
