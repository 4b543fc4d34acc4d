import { Gauge, type Registry } from 'prom-client';
import { registeredMetric } from '../../../ops/kernel/registered-metric.js';
import type { NodeStreams } from './node-streams.js';

/**
 * `troupe_stream_history_bytes{stream}`: what this node keeps of each event stream for resuming clients, so an
 * operator reads the memory the bounds of issue 30 allow (interviews: INTERVIEW_HISTORY_BYTES) against what is held.
 */
export function registerStreamHistoryGauge(registry: Registry, streams: NodeStreams): void {
  registeredMetric(registry, 'troupe_stream_history_bytes', () => new Gauge({
    name: 'troupe_stream_history_bytes', help: 'Bytes of stream history this node keeps for resuming clients (estimated)',
    labelNames: ['stream'], registers: [registry],
    collect() {
      this.set({ stream: 'sessions' }, streams.sessions.usage().bytes);
      this.set({ stream: 'interviews' }, streams.interviews.usage().bytes);
    },
  }));
}
