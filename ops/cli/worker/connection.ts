import type { WorkerLog } from './log.js';

/**
 * Whether the server answers, as the worker last saw it. Only a change does something, so that an outage is logged
 * once however many calls fail: going down hands the probing to the heartbeat (which backs off), coming back sends
 * what waited for it.
 */
export class ServerConnection {
  private answering: boolean | undefined;

  constructor(private readonly log: WorkerLog, private readonly on: { back(): void; lost(): void }) {}

  up(): void {
    if (this.answering === true) return;
    if (this.answering === false) this.log('info', 'server.back', 'the server answers again');
    this.answering = true;
    this.on.back();
  }

  down(err?: unknown): void {
    if (this.answering === false) return;
    this.answering = false;
    this.log('warn', 'server.unreachable', `the server does not answer (${(err as Error)?.message ?? 'unknown'}); agents keep running, retrying with backoff`);
    this.on.lost();
  }
}
