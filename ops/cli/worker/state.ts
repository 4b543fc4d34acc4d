import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { insideDir } from './inside-dir.js';
import type { WorkspaceReport } from './workspace/index.js';
import { isSessionId } from './server-ids.js';

/**
 * The worker's state dir (mode 0700, every file 0600), which makes a restarted worker the same worker:
 * - `worker.json`: the URL it registered with, its workerId and runtime token, and the intervals the server gave;
 * - `reports/<sessionId>.json`: terminal reports not yet acknowledged by the server, sent when it is back;
 * - `credentials/<kind>`: the latest value of each rotated credential (agents read `$TROUPE_CREDENTIALS_DIR/<kind>`);
 * - `credential-stream.json`: the id of the last rotation written there, where the rotate stream resumes;
 * - `model-access.json`: the model-access policy delivered by `modelAccess.set`, given to new sessions' agents.
 * Writes go to a temporary file renamed into place, so a crash never leaves half a file. A name taken from the
 * server (a session id, a credential kind) is checked against its format and the path it makes against the dir it
 * belongs in, before anything is read, written or removed: what the server sends is data, never a path.
 */
export interface Identity {
  readonly url: string;
  readonly name: string;
  readonly workerId: string;
  readonly runtimeJwt: string;
  readonly heartbeatIntervalSeconds: number;
  readonly pollIntervalSeconds: number;
}

/** A terminal outcome the worker owes the server: the statuses still to send, in order. */
export interface PendingReport {
  readonly sessionId: string;
  readonly workerId: string;
  readonly steps: readonly ('running' | 'finalizing' | 'completed' | 'failed')[];
  readonly costUsd: number;
  readonly error?: string;
  readonly exitCode: number | null;
  /** What the run learned, sent with its last statuses (the protocol of issue 34, decision 0076). */
  readonly agent?: { readonly preset: string; readonly agentSessionId?: string };
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number; readonly costUsd?: number };
  readonly workspace?: WorkspaceReport;
}

/** A rotate-stream position the worker keeps and sends back as `Last-Event-ID`: printable ASCII, bounded. */
const headerSafe = /^[\x20-\x7e]{1,256}$/;

export class StateDir {
  readonly reportsDir: string;
  readonly credentialsDir: string;

  constructor(readonly dir: string) {
    this.reportsDir = path.join(dir, 'reports');
    this.credentialsDir = path.join(dir, 'credentials');
    for (const d of [dir, this.reportsDir, this.credentialsDir]) {
      mkdirSync(d, { recursive: true, mode: 0o700 });
      chmodSync(d, 0o700);
    }
  }

  loadIdentity(): Identity | undefined {
    return this.readJson<Identity>(path.join(this.dir, 'worker.json'));
  }

  saveIdentity(identity: Identity): void {
    this.writeFile(path.join(this.dir, 'worker.json'), JSON.stringify(identity, null, 2));
  }

  forgetIdentity(): void {
    rmSync(path.join(this.dir, 'worker.json'), { force: true });
  }

  saveReport(report: PendingReport): void {
    this.writeFile(this.reportFile(report.sessionId), JSON.stringify(report));
  }

  dropReport(sessionId: string): void {
    rmSync(this.reportFile(sessionId), { force: true });
  }

  /** The reports kept; a file whose name or content is not a report of a session id is left alone. */
  pendingReports(): PendingReport[] {
    return readdirSync(this.reportsDir)
      .filter((f) => f.endsWith('.json') && isSessionId(f.slice(0, -'.json'.length)))
      .map((f) => this.readJson<PendingReport>(path.join(this.reportsDir, f)))
      .filter((r): r is PendingReport => r !== undefined && isSessionId(r.sessionId));
  }

  private reportFile(sessionId: string): string {
    if (!isSessionId(sessionId)) throw new Error(`refusing a report for ${JSON.stringify(sessionId).slice(0, 80)}: not a session id`);
    return insideDir(this.reportsDir, `${sessionId}.json`);
  }

  /** Where a credential of `kind` is kept; `kind` is the server's credential kind (`^[a-z0-9][a-z0-9._-]*$`). */
  writeCredential(kind: string, value: string): string {
    if (typeof kind !== 'string' || typeof value !== 'string' || !/^[a-z0-9][a-z0-9._-]{0,63}$/.test(kind)) throw new Error(`refusing credential kind ${JSON.stringify(kind)}`);
    const file = insideDir(this.credentialsDir, kind);
    this.writeFile(file, value);
    return file;
  }

  /** The last rotation the worker kept (its event id), or undefined when it has kept none. */
  credentialStreamPosition(): string | undefined {
    const saved = this.readJson<{ lastEventId?: unknown }>(path.join(this.dir, 'credential-stream.json'));
    return typeof saved?.lastEventId === 'string' && headerSafe.test(saved.lastEventId) ? saved.lastEventId : undefined;
  }

  /**
   * The position is sent back as the `Last-Event-ID` header: one that a header cannot hold (a control character) or
   * that is overly long is not kept, and the stream resumes from the position kept before.
   */
  setCredentialStreamPosition(lastEventId: string | undefined): void {
    const file = path.join(this.dir, 'credential-stream.json');
    if (lastEventId !== undefined && !headerSafe.test(lastEventId)) return;
    if (lastEventId === undefined) rmSync(file, { force: true });
    else this.writeFile(file, JSON.stringify({ lastEventId }));
  }

  modelAccess(): unknown {
    return this.readJson(path.join(this.dir, 'model-access.json'));
  }

  setModelAccess(policy: unknown): void {
    this.writeFile(path.join(this.dir, 'model-access.json'), JSON.stringify(policy));
  }

  clearModelAccess(): void {
    rmSync(path.join(this.dir, 'model-access.json'), { force: true });
  }

  private readJson<T>(file: string): T | undefined {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as T;
    } catch {
      return undefined;
    }
  }

  private writeFile(file: string, text: string): void {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, text, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  }
}
