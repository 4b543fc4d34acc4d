import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay on loopback between the browser and the node whose connections the test can cut at once, as a
 * dropped Wi-Fi or a restarted load balancer would: the page's event stream then has to reconnect and resume.
 */
export class CuttableProxy {
  private readonly sockets = new Set<net.Socket>();
  private constructor(private readonly server: net.Server) {}

  static async start(targetPort: number): Promise<CuttableProxy> {
    const server = net.createServer();
    const proxy = new CuttableProxy(server);
    server.on('connection', (client) => {
      const upstream = net.connect(targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        proxy.sockets.add(s);
        s.on('close', () => proxy.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Drops every open connection; new ones are accepted as before. */
  cutAll(): void {
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    this.cutAll();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
