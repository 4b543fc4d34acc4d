import type { Knex } from 'knex';
import type { Clock } from '../../ops/kernel/clock.js';

/**
 * Recorded authorization denials (decision 0009 "Recorded denials"; table `authz_denials`, migration 0014).
 * `authorize` hands each refusal to `record`, which only appends to an in-memory buffer: the request never waits on
 * this table. A timer writes the buffer in one multi-row insert; every so often the same flush prunes rows older
 * than the retention. Memory is bounded: past `maxBuffered` pending rows the oldest are dropped and counted, so a
 * flood of refused requests (an attacker probing) cannot grow the heap, only make the record lossy, visibly.
 */

export interface Denial {
  readonly orgId: string;
  readonly principalKind: string;
  readonly principalId: string;
  readonly action: string;
  readonly resourceType: string;
  /** Cedar ids of the policies that determined the decision (a forbid's id; empty when nothing permitted). */
  readonly determiningPolicies: readonly string[];
  /** True when a policy failed to evaluate (that alone denies). */
  readonly evaluationError: boolean;
  readonly at: number;
}

export interface DenialRecorderOptions {
  readonly clock: Clock;
  readonly onError?: (err: unknown) => void;
  /** @default 1000 */
  readonly flushIntervalMs?: number;
  /** @default 10000 */
  readonly maxBuffered?: number;
  /** Rows older than this are pruned. @default 90 days, the longest security-metrics window */
  readonly retentionMs?: number;
  /** @default 1 hour */
  readonly pruneEveryMs?: number;
}

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_POLICIES_KEPT = 20;
const MAX_TEXT = 200;
const BATCH_ROWS = 500;

export class DenialRecorder {
  private buffer: Denial[] = [];
  private flushing: Promise<void> | undefined;
  private lastPruneAt = 0;
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  /** Denials dropped because the buffer was full; logged with each flush error and exposed for tests and metrics. */
  dropped = 0;

  constructor(private readonly db: Knex, private readonly options: DenialRecorderOptions) {
    this.timer = setInterval(() => void this.flush(), options.flushIntervalMs ?? 1000);
    this.timer.unref();
  }

  record(denial: Denial): void {
    if (this.closed || !uuid.test(denial.orgId)) return;
    if (this.buffer.length >= (this.options.maxBuffered ?? 10_000)) {
      this.buffer.shift();
      this.dropped += 1;
    }
    this.buffer.push(denial);
  }

  /** Writes what is buffered; concurrent calls share one write. Never throws (a lost batch is reported). */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => { this.flushing = undefined; });
    return this.flushing;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.flushing;
    await this.flush();
  }

  private async write(): Promise<void> {
    const batch = this.buffer.splice(0);
    try {
      for (let i = 0; i < batch.length; i += BATCH_ROWS) {
        await this.db('authz_denials').insert(batch.slice(i, i + BATCH_ROWS).map(rowOf));
      }
      const now = this.options.clock.now();
      if (now - this.lastPruneAt >= (this.options.pruneEveryMs ?? 3_600_000)) {
        this.lastPruneAt = now;
        await this.db('authz_denials').where('at', '<', new Date(now - (this.options.retentionMs ?? 90 * 86_400_000))).delete();
      }
    } catch (err) {
      this.options.onError?.(err);
    }
  }
}

const clip = (text: string): string => (text.length <= MAX_TEXT ? text : text.slice(0, MAX_TEXT));

function rowOf(d: Denial): Record<string, unknown> {
  return {
    org_id: d.orgId, principal_kind: clip(d.principalKind), principal_id: clip(d.principalId), action: clip(d.action),
    resource_type: clip(d.resourceType), determining_policies: JSON.stringify(d.determiningPolicies.slice(0, MAX_POLICIES_KEPT).map(clip)),
    evaluation_error: d.evaluationError, at: new Date(d.at),
  };
}

export interface DenialFigures {
  readonly total: number;
  readonly byAction: Record<string, number>;
  readonly byPrincipalKind: Record<string, number>;
  readonly evaluationErrors: number;
  /** How often each stored policy determined a denial, most first (at most 20). */
  readonly topDeterminingPolicies: ReadonlyArray<{ readonly policy: string; readonly denials: number }>;
}

export async function denialFigures(db: Knex, orgId: string, sinceMs: number): Promise<DenialFigures> {
  const inWindow = () => db('authz_denials').where({ org_id: orgId }).andWhere('at', '>=', new Date(sinceMs));
  const [byAction, byKind, errors, policies] = await Promise.all([
    inWindow().select('action').count({ n: '*' }).groupBy('action'),
    inWindow().select('principal_kind').count({ n: '*' }).groupBy('principal_kind'),
    inWindow().where({ evaluation_error: true }).count({ n: '*' }).first(),
    db.select('policy').count({ n: '*' })
      .from(inWindow().select(db.raw('jsonb_array_elements_text(determining_policies) as policy')).as('d'))
      .groupBy('policy').orderBy([{ column: 'n', order: 'desc' }, { column: 'policy' }]).limit(20),
  ]);
  const tally = (rows: unknown[], key: string): Record<string, number> =>
    Object.fromEntries((rows as Array<Record<string, unknown>>).map((r) => [String(r[key]), Number(r.n)]));
  const actions = tally(byAction, 'action');
  return {
    total: Object.values(actions).reduce((a, b) => a + b, 0),
    byAction: actions,
    byPrincipalKind: tally(byKind, 'principal_kind'),
    evaluationErrors: Number((errors as { n?: unknown } | undefined)?.n ?? 0),
    topDeterminingPolicies: (policies as Array<{ policy: string; n: unknown }>).map((r) => ({ policy: r.policy, denials: Number(r.n) })),
  };
}

export interface DenialRow {
  readonly at: string;
  readonly principalKind: string;
  readonly principalId: string;
  readonly action: string;
  readonly resourceType: string;
  readonly determiningPolicies: readonly string[];
  readonly evaluationError: boolean;
}

/** Newest first, at most `limit` denials of the window. */
export async function denialTimeline(db: Knex, orgId: string, sinceMs: number, limit: number): Promise<DenialRow[]> {
  const rows = await db('authz_denials').where({ org_id: orgId }).andWhere('at', '>=', new Date(sinceMs))
    .orderBy([{ column: 'at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit)
    .select('at', 'principal_kind', 'principal_id', 'action', 'resource_type', 'determining_policies', 'evaluation_error');
  return rows.map((r: Record<string, unknown>) => ({
    at: new Date(r.at as string).toISOString(), principalKind: String(r.principal_kind), principalId: String(r.principal_id),
    action: String(r.action), resourceType: String(r.resource_type),
    determiningPolicies: (typeof r.determining_policies === 'string' ? JSON.parse(r.determining_policies) : r.determining_policies) as string[],
    evaluationError: Boolean(r.evaluation_error),
  }));
}
