// Invariant: the worker's output relay numbers every chunk of one claim once: a batch put back after a failed call
// goes again under the same numbers; past 1 MiB unsent it asks its owner to stop reading the agent, and lets it read
// again once the server took the backlog; a node that refuses `relay` (400, an older node) gets the batch again
// without it, and a batch refused twice is dropped rather than held for ever; a 409 ends the relay's sending.
// A unit test of the relay's logic: the server is a recorded function.
import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, type WorkerApi } from '../../../ops/cli/worker/api.js';
import { OutputRelay } from '../../../ops/cli/worker/output-relay.js';

interface Call { chunks: string[]; relay?: { id: string; firstChunk: number } }

function relayWith(answer: (call: Call, n: number) => Promise<void>) {
  const calls: Call[] = [];
  const api = {
    output: async (_token: string, _id: string, body: Call) => {
      calls.push({ chunks: [...body.chunks], ...(body.relay ? { relay: { ...body.relay } } : {}) });
      await answer(body, calls.length);
    },
    stepHeartbeat: async () => undefined,
  } as unknown as WorkerApi;
  let notHeld = 0;
  const relay = new OutputRelay('a1b2c3d4e5f60718', api, { token: 't', workerId: 'w' } as never, {
    isRunning: () => true, keepsUnsent: () => true, notHeld: () => { notHeld++; },
  });
  return { relay, calls, notHeld: () => notHeld };
}

const lines = (from: number, n: number) => Array.from({ length: n }, (_, i) => `line ${from + i}\n`);

describe('worker output relay (unit)', () => {
  it('numbers the chunks of a claim, and sends a batch put back after a failure under the same numbers', async () => {
    const { relay, calls } = relayWith(async (_call, n) => { if (n === 2) throw new Error('connection reset'); });
    for (const line of lines(0, 20)) relay.add(line);
    expect(await relay.flush()).to.equal(true);
    for (const line of lines(20, 5)) relay.add(line);
    expect(await relay.flush()).to.equal(false);
    expect(await relay.flush()).to.equal(true);
    expect(calls.map((c) => c.relay?.firstChunk)).to.deep.equal([0, 20, 20]);
    expect(new Set(calls.map((c) => c.relay?.id)).size).to.equal(1);
    expect(calls[2]!.chunks).to.deep.equal(lines(20, 5));
  });

  it('asks to stop reading the agent past 1 MiB unsent, and to read again once the server took it', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => { open = resolve; });
    const { relay, calls } = relayWith(async (_call, n) => { if (n === 1) await gate; });
    const told: boolean[] = [];
    relay.onBacklog((full) => told.push(full));
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 1100; i++) relay.add(line);
    expect(told).to.deep.equal([true]);
    open();
    await relay.sendRest();
    expect(told).to.deep.equal([true, false]);
    expect(calls.reduce((n, c) => n + c.chunks.length, 0), 'nothing dropped').to.equal(1100);
  });

  it('sends again without `relay` to a node that refuses it, then drops a batch refused twice', async () => {
    const refused = new ApiError(400, 'VALIDATION_FAILED', 'request does not match its schema', undefined);
    const { relay, calls } = relayWith(async (call, n) => { if (call.relay !== undefined || n >= 3) throw refused; });
    for (const line of lines(0, 3)) relay.add(line);
    await relay.flush();
    await sleep(10);
    expect(calls.map((c) => c.relay === undefined)).to.deep.equal([false, true]);
    for (const line of lines(3, 2)) relay.add(line);
    expect(await relay.flush(), 'refused again: dropped').to.equal(false);
    expect(relay.hasUnsent).to.equal(false);
  });

  it('stops sending what it holds when the server says the worker no longer holds the session', async () => {
    const { relay, notHeld } = relayWith(async () => { throw new ApiError(409, 'CONFLICT', 'not held', undefined); });
    for (const line of lines(0, 30)) relay.add(line);
    await relay.flush();
    expect(notHeld()).to.equal(1);
    expect(relay.hasUnsent).to.equal(false);
  });
});
