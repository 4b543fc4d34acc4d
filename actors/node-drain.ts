/**
 * Whether this node has begun to shut down. Set once, at the first moment of a drain (SIGTERM or SIGINT), before
 * the node stops serving: /readyz answers 503 from then on, so a load balancer takes the node out of rotation while
 * requests already on their way are still answered (decision 0040).
 */
export class NodeDrain {
  private began: number | undefined;

  get draining(): boolean {
    return this.began !== undefined;
  }

  /** Idempotent: the first call wins. */
  begin(now: number): void {
    this.began ??= now;
  }
}
