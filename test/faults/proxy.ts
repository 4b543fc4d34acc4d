import { once } from 'node:events';
import net from 'node:net';

/**
 * A TCP proxy in front of one engine for the fault tests: it passes bytes both ways, and on demand adds latency
 * (every chunk held for `latencyMs`, order kept), blackholes (accepts and reads, forwards nothing: a link that went
 * silent), resets every open connection (RST, as a crashed middlebox would), or refuses new ones. For Postgres it can
 * also lose one COMMIT's answer (`loseCommitAnswer`): the transaction commits, the client never hears so.
 */
/** Postgres' ReadyForQuery with the transaction status "idle": whatever the connection ran has committed. */
const READY_AND_IDLE = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);

export class FaultProxy {
  latencyMs = 0;
  private blackholed = false;
  private refusing = false;
  private readonly open = new Set<net.Socket>();
  private commitCut: { marker: Buffer; done: () => void } | undefined;

  private constructor(private readonly server: net.Server, readonly port: number, private readonly target: number) {}

  static async start(targetPort: number): Promise<FaultProxy> {
    let proxy: FaultProxy | undefined;
    const server = net.createServer((client) => proxy!.accept(client));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    proxy = new FaultProxy(server, (server.address() as net.AddressInfo).port, targetPort);
    return proxy;
  }

  /** The engine URL with this proxy's port in place of the engine's. */
  urlFor(engineUrl: string): string {
    const url = new URL(engineUrl);
    url.port = String(this.port);
    return url.toString().replace(/\/$/, '');
  }

  blackhole(on: boolean): void {
    this.blackholed = on;
  }

  refuse(on: boolean): void {
    this.refusing = on;
  }

  /** Every open connection is reset now; new ones are accepted (unless refusing). */
  resetAll(): void {
    for (const socket of this.open) socket.resetAndDestroy();
  }

  /**
   * The next transaction on a connection that sent `marker` (an actor address in its statement) commits, and the
   * server's `COMMIT` answer is dropped and the client's connection reset instead: a commit whose outcome the client
   * cannot know. Resolves once it happened.
   */
  loseCommitAnswer(marker: string): Promise<void> {
    return new Promise((resolve) => { this.commitCut = { marker: Buffer.from(marker), done: resolve }; });
  }

  heal(): void {
    this.latencyMs = 0;
    this.blackholed = false;
    this.refusing = false;
  }

  async close(): Promise<void> {
    this.resetAll();
    this.server.close();
  }

  private accept(client: net.Socket): void {
    if (this.refusing) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(this.target, '127.0.0.1');
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    for (const socket of [client, upstream]) {
      this.open.add(socket);
      socket.on('close', () => this.open.delete(socket));
      socket.on('error', () => undefined);
    }
    const end = () => { client.destroy(); upstream.destroy(); };
    client.on('close', end);
    upstream.on('close', end);
    this.watchForCommitCut(client, upstream);
    this.pipe(client, upstream);
    this.pipe(upstream, client);
  }

  /**
   * Arms the cut for this connection once it sends the marker; fires on the server's next ReadyForQuery saying
   * "idle" (`Z`, length 5, `I`): by then the marker's transaction has committed, whether it was an explicit
   * BEGIN … COMMIT or a single statement committed on its own.
   */
  private watchForCommitCut(client: net.Socket, upstream: net.Socket): void {
    let marked = false;
    client.on('data', (chunk: Buffer) => {
      if (this.commitCut !== undefined && chunk.includes(this.commitCut.marker)) marked = true;
    });
    upstream.prependListener('data', (chunk: Buffer) => {
      const cut = this.commitCut;
      if (!marked || cut === undefined || !chunk.includes(READY_AND_IDLE)) return;
      this.commitCut = undefined;
      upstream.pause();
      upstream.removeAllListeners('data');
      client.resetAndDestroy();
      upstream.destroy();
      cut.done();
    });
  }

  /** One direction: chunks leave in arrival order, each no sooner than `latencyMs` after it came. */
  private pipe(from: net.Socket, to: net.Socket): void {
    let releaseAt = 0;
    from.on('data', (chunk: Buffer) => {
      if (this.blackholed) return;
      if (this.latencyMs <= 0 && releaseAt <= Date.now()) {
        to.write(chunk);
        return;
      }
      releaseAt = Math.max(releaseAt, Date.now() + this.latencyMs);
      setTimeout(() => { if (!to.destroyed) to.write(chunk); }, releaseAt - Date.now());
    });
  }
}
