import http from 'node:http';

/**
 * The writing side of the slow-readers drive (slow-readers.ts): a worker posting token deltas to the interview at a
 * steady rate, one post of 20 tokens per frame, the first token its send time (this process's clock), so each
 * reader takes a frame's delay from the frame itself.
 */

const now = () => performance.timeOrigin + performance.now();

export interface PublisherPlan {
  /** `POST /api/interview/:id/deltas` of the interview, absolute. */
  readonly deltasUrl: string;
  /** The worker's runtime JWT. */
  readonly token: string;
  readonly framesPerSecond: number;
  /** Bytes of tokens per frame. */
  readonly frameBytes: number;
}

export class Publisher {
  published = 0;
  failures = 0;
  /** Frames the node accepted: when the post was answered, and the tokens' bytes. */
  readonly posted: Array<{ at: number; bytes: number }> = [];
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  private readonly padding: string[];
  private readonly inFlight = new Set<Promise<void>>();
  private ticker: NodeJS.Timeout | undefined;

  constructor(private readonly plan: PublisherPlan) {
    this.padding = Array.from({ length: 19 }, (_, i) => String.fromCharCode(97 + (i % 26)).repeat(Math.max(1, Math.floor(plan.frameBytes / 19))));
  }

  /** Posts at `framesPerSecond`, catching up on a late tick with as many posts as it owes. */
  start(): void {
    let owed = 0;
    let last = performance.now();
    this.ticker = setInterval(() => {
      const t = performance.now();
      owed += ((t - last) / 1000) * this.plan.framesPerSecond;
      last = t;
      for (; owed >= 1; owed -= 1) { const p = this.post(); this.inFlight.add(p); void p.finally(() => this.inFlight.delete(p)); }
    }, 5);
  }

  /** Stops posting; posts already sent are still counted when answered. */
  stop(): void {
    clearInterval(this.ticker);
  }

  /** Resolves when every post sent has been answered or has failed. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  private post(): Promise<void> {
    return new Promise<void>((resolve) => {
      const sentAt = now();
      const body = JSON.stringify({ tokens: [sentAt.toFixed(3), ...this.padding] });
      const req = http.request(this.plan.deltasUrl, {
        method: 'POST', agent: this.agent, timeout: 10_000,
        headers: { authorization: `Bearer ${this.plan.token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 202) { this.published += 1; this.posted.push({ at: now(), bytes: body.length }); } else this.failures += 1;
          resolve();
        });
      });
      req.on('timeout', () => req.destroy(new Error('deadline')));
      req.on('error', () => { this.failures += 1; resolve(); });
      req.end(body);
    });
  }
}
