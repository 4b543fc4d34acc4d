// Invariant (issue 33): one default ask deadline. An ask between actors that names no deadline of its own (a gate
// telling its run of a decision) waits as long as the node is configured to (`askTimeoutMs`,
// TROUPE_ASK_TIMEOUT_MS), like every other ask on the node.
import { expect } from 'chai';
import { actorKinds } from '../../../actors/kinds/index.js';
import type { GateEffect } from '../../../actors/kinds/approval-gate/machine.js';
import type { EffectContext } from '../../../actors/runtime/machine.js';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { LocalTransport } from '../../../transport/local.js';
import type { AskOptions } from '../../../transport/port.js';

describe('actor kinds: the default deadline of asks between actors', () => {
  for (const askTimeoutMs of [1_234, 30_000]) {
    it(`is the node's configured askTimeoutMs (${askTimeoutMs} ms)`, async () => {
      const asked: Array<{ address: string; options: AskOptions }> = [];
      const transport = new LocalTransport({ nodeId: 'deadline-test', log: silentLogger() });
      transport.ask = async <R>(address: string, _message: unknown, options: AskOptions): Promise<R> => {
        asked.push({ address, options });
        return undefined as R;
      };
      const gate = actorKinds({ transport, askTimeoutMs }).find((kind) => kind.kind === 'approval-gate')!;
      const decided: GateEffect = { type: 'notifyRun', runId: 'run-1', gateId: 'gate-1', decision: 'approved' };
      const ctx: EffectContext<{ type: string }> = { id: 'gate-1', address: 'approval-gate/gate-1', log: silentLogger(), tellSelf: () => undefined };

      await gate.afterPersist!([decided], ctx);

      expect(asked).to.deep.equal([{ address: 'workflow-run/run-1', options: { timeoutMs: askTimeoutMs } }]);
    });
  }
});
