import type { DaemonOfferEvent, DaemonStopEvent, OfferedSession } from './api.js';
import type { StreamSpec } from './event-stream.js';
import type { WorkerLog } from './log.js';
import { isSessionId } from './server-ids.js';
import type { SessionTable } from './session-table.js';

/** What the daemon event stream's events act on. */
export interface DaemonEventTargets {
  readonly log: WorkerLog;
  readonly table: SessionTable;
  /** The stream is (re)connected: the server answers. */
  readonly connected: () => void;
  /** Sessions this worker runs are checked against those the server gives it, for claims answered before `before`. */
  readonly reconcile: (before: number) => void;
  readonly pollSoon: () => void;
  readonly take: (offer: OfferedSession | undefined) => void;
  /** A mutation waits: the heartbeat fetches it now. */
  readonly wakeHeartbeat: () => void;
}

/**
 * The daemon event stream: offers of sessions to take, stops of sessions the worker runs, a nudge to poll, and word
 * that a mutation waits. Its `ready` (each connection) is when the worker catches up with what it missed.
 */
export function daemonEvents(to: DaemonEventTargets): StreamSpec {
  return {
    path: '/api/daemon/events',
    onEvent(event, data, _lastEventId, requestedAt) {
      const d = data as Record<string, unknown>;
      const id = d?.sessionId ?? (d?.session as { id?: unknown } | undefined)?.id;
      // Only a well-formed id is logged as a session's: a malformed one is shown, but searching the log by session never finds it.
      to.log('debug', 'stream.event', `daemon event ${event}`, isSessionId(id) ? { sessionId: id } : { offeredId: id });
      switch (event) {
        case 'ready':
          to.log('debug', 'stream.ready', 'daemon event stream connected');
          to.connected();
          to.reconcile(requestedAt);
          to.pollSoon();
          return;
        case 'offer':
          to.take((data as DaemonOfferEvent).session);
          return;
        case 'poll':
          to.pollSoon();
          return;
        case 'stop': {
          const stop = data as DaemonStopEvent;
          to.table.running.get(stop.sessionId)?.stopAgent(stop.reason || stop.status, false);
          return;
        }
        case 'mutation':
          to.wakeHeartbeat();
          return;
      }
    },
  };
}
