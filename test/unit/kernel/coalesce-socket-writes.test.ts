// Invariant: writes made to a socket in one tick leave it as one writev, in order and whole; writes of later ticks
// go out by themselves; anything that is not a socket is left alone.
import { expect } from 'chai';
import net from 'node:net';
import sinon from 'sinon';
import { coalesceSocketWrites } from '../../../ops/kernel/coalesce-socket-writes.js';

describe('coalesceSocketWrites', () => {
  let server: net.Server;
  let received: Buffer[];
  let client: net.Socket;

  beforeEach(async () => {
    received = [];
    server = net.createServer((socket) => socket.on('data', (chunk) => received.push(chunk)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    await new Promise((resolve) => client.once('connect', resolve));
  });

  afterEach(async () => {
    client.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  const arrived = async (bytes: number) => {
    for (let i = 0; i < 200 && Buffer.concat(received).length < bytes; i += 1) await new Promise((r) => setTimeout(r, 5));
    return Buffer.concat(received).toString();
  };

  it('sends the writes of one tick as one writev, and a later tick’s on its own', async () => {
    expect(coalesceSocketWrites(client)).to.equal(true);
    const writev = sinon.spy(client as unknown as { _writev: (...a: unknown[]) => void }, '_writev');
    const single = sinon.spy(client as unknown as { _write: (...a: unknown[]) => void }, '_write');
    client.write('*1\r\n');
    client.write('$4\r\nPING\r\n');
    client.write('!');
    await new Promise((resolve) => setImmediate(resolve));
    expect(writev.callCount).to.equal(1);
    expect((writev.firstCall.args[0] as unknown[]).length).to.equal(3);
    client.write('after');
    await new Promise((resolve) => setImmediate(resolve));
    expect(writev.callCount).to.equal(1);
    expect(single.callCount).to.equal(1);
    expect(await arrived(20)).to.equal('*1\r\n$4\r\nPING\r\n!after');
  });

  it('leaves what is not a socket alone', () => {
    expect(coalesceSocketWrites(undefined)).to.equal(false);
    expect(coalesceSocketWrites({ write: () => true })).to.equal(false);
  });
});
