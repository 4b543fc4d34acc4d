// Invariant: a warning that floods (the same dependency failure for every request) is written once per kind and
// window in full, the rest counted into one summary line when the window ends; kinds are windowed apart.
import { expect } from 'chai';
import sinon from 'sinon';
import { driverWarnings, warnOncePerWindow } from '../../../ops/kernel/flood-log.js';
import { capturingLogger } from '../../support/http.js';

describe('flood log', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => { clock = sinon.useFakeTimers(); });
  afterEach(() => clock.restore());

  it('writes the first of a kind, sums up the rest when its window ends, then writes the next in full', () => {
    const { log, lines } = capturingLogger();
    for (let i = 0; i < 1_000; i++) warnOncePerWindow(log, 'dependency:STORAGE_UNAVAILABLE', { reqId: `r${i}` }, 'request failed on a dependency');
    warnOncePerWindow(log, 'dependency:TRANSPORT_UNAVAILABLE', { reqId: 'b' }, 'request failed on a dependency');
    expect(lines.map((l) => l.reqId)).to.deep.equal(['r0', 'b']);
    clock.tick(5_000);
    expect(lines).to.have.length(3);
    expect(lines[2]).to.include({ kind: 'dependency:STORAGE_UNAVAILABLE', suppressed: 999, level: 40 });
    expect(lines[2]!.msg).to.match(/999 more like it in 5 s/);
    warnOncePerWindow(log, 'dependency:STORAGE_UNAVAILABLE', { reqId: 'later' }, 'request failed on a dependency');
    expect(lines[3]).to.include({ reqId: 'later' });
    clock.tick(5_000);
    expect(lines, 'no summary for a window with nothing suppressed').to.have.length(4);
  });

  it("windows knex's per-acquisition warnings by their first line and passes the storage layer's own through", () => {
    const { log, lines } = capturingLogger();
    const warn = driverWarnings(log);
    for (let i = 0; i < 65; i++) warn('Acquire connection error: Error: operation timed out for an unknown reason\n    at /node_modules/tarn/dist/PendingOperation.js:17:27');
    warn('Connection Error: Connection ended unexpectedly');
    warn('postgres is unreachable (timeout expired): queries fail at once with STORAGE_UNAVAILABLE until a connection is made again');
    warn('postgres accepts connections again: the storage breaker closed');
    warn('postgres accepts connections again: the storage breaker closed');
    expect(lines.map((l) => l.msg)).to.deep.equal([
      'Acquire connection error: Error: operation timed out for an unknown reason (stack: at /node_modules/tarn/dist/PendingOperation.js:17:27)',
      'Connection Error: Connection ended unexpectedly',
      'postgres is unreachable (timeout expired): queries fail at once with STORAGE_UNAVAILABLE until a connection is made again',
      'postgres accepts connections again: the storage breaker closed',
      'postgres accepts connections again: the storage breaker closed',
    ]);
    clock.tick(5_000);
    expect(lines[5]).to.include({ suppressed: 64, level: 40 });
  });
});
