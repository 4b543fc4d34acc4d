import { ApiError, type CredentialRotatedEvent } from './api.js';
import type { StreamSpec } from './event-stream.js';
import type { WorkerLog } from './log.js';
import type { SessionTable } from './session-table.js';
import type { StateDir } from './state.js';

/**
 * The rotate stream: each rotated credential is written where agents read it (`$TROUPE_CREDENTIALS_DIR/<kind>`) and
 * running agents are sent SIGHUP to read it again. The stream resumes after the last rotation kept, so none made
 * while it was down is missed; `0`, with none kept yet, asks for every credential's last rotation.
 */
export function credentialRotation(state: StateDir, table: SessionTable, log: WorkerLog): StreamSpec {
  return {
    path: '/api/daemon/credentials/stream',
    resumeFrom: () => state.credentialStreamPosition() ?? '0',
    onEvent(event, data, lastEventId) {
      if (event !== 'credential.rotated') return;
      const { kind, value } = (data ?? {}) as CredentialRotatedEvent;
      try {
        const file = state.writeCredential(kind, value);
        // Only once the value is on disk: a crash in between replays this rotation rather than skipping it.
        if (lastEventId !== undefined) state.setCredentialStreamPosition(lastEventId);
        let signalled = 0;
        for (const s of table.running.values()) if (s.agent.signal('SIGHUP')) signalled++;
        log('info', 'credential.rotated', `credential ${kind} rotated: written to ${file}, ${signalled} agent(s) sent SIGHUP`, { kind, agents: signalled });
      } catch (err) {
        log('error', 'credential.failed', `could not keep rotated credential ${kind}: ${(err as Error).message}`, { kind });
      }
    },
    handleError(err) {
      if (!(err instanceof ApiError && err.status === 400 && err.code === 'VALIDATION_FAILED')) return false;
      // A position the server does not read (a state dir edited by hand) is dropped: from the start instead.
      log('warn', 'credential.position_refused', `the server refused the rotate stream's position; resuming from every credential's last rotation: ${err.message}`);
      state.setCredentialStreamPosition(undefined);
      return true;
    },
  };
}
