import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTroupeClient, TroupeApiError, TroupeUnreachableError, unwrap, type TroupeApi } from '../../../http/client/index.js';

/**
 * `troupe mcp`'s side of the agent line (decision 0088): the calls its tools make, with the session token, through
 * the typed client. Asking a person opens a request and then waits for it with long polls (25 s each), which ride
 * out a node restarting or a proxy cutting an idle request: an unanswered or 5xx poll is asked again after a pause,
 * for up to `MAX_POLL_FAILURES` in a row.
 */

export interface LineSettings {
  readonly url: string;
  readonly token: string;
  readonly sessionId: string;
}

/** What a wait ended with: a person's decision, or the run's end before one. */
export interface Decided {
  readonly decision: 'approved' | 'rejected' | 'escalated' | 'ended';
  readonly comment: string | null;
  /** The decider's email (their user id when it has none); null when the run ended first. */
  readonly decidedBy: string | null;
  readonly sessionStatus: string;
}

const WAIT_SECONDS = 25;
const MAX_POLL_FAILURES = 30;
const RETRY_PAUSE_MS = 1000;

export class AgentLine {
  private readonly api: TroupeApi;
  private readonly path: { id: string };

  constructor(settings: LineSettings, private readonly retryPauseMs = RETRY_PAUSE_MS) {
    // A poll holds the request up to WAIT_SECONDS; the deadline leaves room for the answer to travel.
    this.api = createTroupeClient({ baseUrl: settings.url, token: settings.token, timeoutMs: (WAIT_SECONDS + 15) * 1000 });
    this.path = { id: settings.sessionId };
  }

  async requestApproval(summary: string, details: string | undefined): Promise<Decided> {
    const opened = await this.askOnce((key) => unwrap(this.api.POST('/api/sessions/{id}/agent/approvals', {
      params: { path: this.path }, body: { summary, key, ...(details === undefined ? {} : { details }) },
    })));
    return this.waitFor(opened.id);
  }

  /** `allowed` at once when policy permits the tool, else the person's decision. */
  async toolPermission(toolName: string, input: Record<string, unknown>): Promise<Decided | 'allowed'> {
    const asked = await this.askOnce((key) => unwrap(this.api.POST('/api/sessions/{id}/agent/tool-permissions', { params: { path: this.path }, body: { toolName, input, key } })));
    if (asked.decision === 'allowed' || asked.request === undefined) return 'allowed';
    return this.waitFor(asked.request.id);
  }

  /**
   * Sends a request that opens a gate under one key, and once more with the same key when no answer came: the node
   * answers the retry with the gate the first try opened, so a person is never asked twice.
   */
  private async askOnce<T>(send: (key: string) => Promise<T>): Promise<T> {
    const key = randomUUID();
    try {
      return await send(key);
    } catch (err) {
      if (!(err instanceof TroupeUnreachableError)) throw err;
      await sleep(this.retryPauseMs);
      return send(key);
    }
  }

  async reportProgress(message: string): Promise<void> {
    await unwrap(this.api.POST('/api/sessions/{id}/agent/progress', { params: { path: this.path }, body: { message } }));
  }

  async postTrackerComment(text: string): Promise<{ tracker: string; issue: string }> {
    return unwrap(this.api.POST('/api/sessions/{id}/agent/tracker-comments', { params: { path: this.path }, body: { text } }));
  }

  private async waitFor(gateId: string): Promise<Decided> {
    let failures = 0;
    for (;;) {
      try {
        const state = await unwrap(this.api.GET('/api/sessions/{id}/agent/approvals/{gateId}', {
          params: { path: { ...this.path, gateId }, query: { waitSeconds: String(WAIT_SECONDS) } },
        }));
        failures = 0;
        if (state.status === 'pending') continue;
        const by = state.decidedBy;
        return {
          decision: state.status, comment: state.comment ?? null, decidedBy: by ? by.email ?? by.userId : null,
          sessionStatus: state.sessionStatus ?? 'unknown',
        };
      } catch (err) {
        const transient = err instanceof TroupeUnreachableError || (err instanceof TroupeApiError && err.status >= 500);
        if (!transient || ++failures >= MAX_POLL_FAILURES) throw err;
        await sleep(this.retryPauseMs);
      }
    }
  }
}
