/**
 * Whether this node has begun to shut down. Set once, at the first moment of a drain (SIGTERM or SIGINT), before
 * the node stops serving: /readyz answers 503 from then on, so a load balancer takes the node out of rotation while
 * requests already on their way are still answered (decision 0040). Before the node has finished starting (its HTTP
 * server listens before it resumes waiting runs and probes its dependencies) /readyz answers 503 as well.
 */
export class NodeDrain {
  private began: number | undefined;
  private started = false;

  /** Started and not draining: what /readyz's `accepting` reports. */
  get serving(): boolean {
    return this.started && this.began === undefined;
  }

  /** The node has finished starting. */
  markStarted(): void {
    this.started = true;
  }

  get draining(): boolean {
    return this.began !== undefined;
  }

  /** Idempotent: the first call wins. */
  begin(now: number): void {
    this.began ??= now;
  }
}
