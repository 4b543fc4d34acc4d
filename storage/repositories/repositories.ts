import type { Knex } from 'knex';

/**
 * A project's repositories (migration 0048, decision 0075). Every read and write is scoped by org and project: another
 * org's or another project's repository is simply absent.
 */
export interface RepositoryRecord {
  readonly id: string;
  readonly orgId: string;
  readonly projectId: string;
  readonly name: string;
  readonly url: string;
  readonly defaultBranch: string;
  readonly createdBy: string;
  readonly createdAt: string;
}

/** A project holds at most this many: each is a mirror on every worker that runs its sessions. */
export const MAX_REPOSITORIES_PER_PROJECT = 200;

type Row = Record<string, unknown>;

const toRecord = (r: Row): RepositoryRecord => ({
  id: String(r.id), orgId: String(r.org_id), projectId: String(r.project_id), name: String(r.name), url: String(r.url),
  defaultBranch: String(r.default_branch), createdBy: String(r.created_by), createdAt: new Date(r.created_at as string).toISOString(),
});

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type CreateOutcome =
  | { readonly kind: 'created'; readonly repository: RepositoryRecord }
  | { readonly kind: 'taken'; readonly field: 'name' | 'url' }
  | { readonly kind: 'full' };

/** Runs in the change's transaction, so the repository and its audit entry commit together. */
export type AuditIn = (trx: Knex.Transaction, repository: RepositoryRecord) => Promise<void>;

/**
 * Registers a repository unless its name or URL is taken in the project or the project is full. The checks and the
 * insert run under a lock on the project, so two concurrent registrations cannot both take the last place or a name.
 */
export async function createRepository(
  db: Knex, r: Omit<RepositoryRecord, 'createdAt'> & { readonly at: Date }, audit: AuditIn,
): Promise<CreateOutcome> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 48))', [`repositories:${r.projectId}`]);
    const existing = await trx('project_repositories').where({ project_id: r.projectId })
      .select(trx.raw('count(*)::int as n'), trx.raw('bool_or(name = ?) as name_taken', [r.name]), trx.raw('bool_or(url = ?) as url_taken', [r.url]))
      .first();
    if (existing?.name_taken === true) return { kind: 'taken', field: 'name' } as const;
    if (existing?.url_taken === true) return { kind: 'taken', field: 'url' } as const;
    if (Number(existing?.n ?? 0) >= MAX_REPOSITORIES_PER_PROJECT) return { kind: 'full' } as const;
    const rows = await trx('project_repositories').insert({
      id: r.id, org_id: r.orgId, project_id: r.projectId, name: r.name, url: r.url, default_branch: r.defaultBranch,
      created_by: r.createdBy, created_at: r.at,
    }).returning('*') as Row[];
    const repository = toRecord(rows[0]!);
    await audit(trx, repository);
    return { kind: 'created', repository } as const;
  });
}

export async function listRepositories(db: Knex, orgId: string, projectId: string): Promise<RepositoryRecord[]> {
  const rows = await db('project_repositories').where({ org_id: orgId, project_id: projectId })
    .orderBy([{ column: 'created_at' }, { column: 'id' }]).limit(MAX_REPOSITORIES_PER_PROJECT);
  return (rows as Row[]).map(toRecord);
}

/** Removes the project's repository; undefined when there is none by this id (or it is another org's or project's). */
export async function deleteRepository(db: Knex, orgId: string, projectId: string, id: string, audit: AuditIn): Promise<RepositoryRecord | undefined> {
  if (!uuidPattern.test(id)) return undefined;
  return db.transaction(async (trx) => {
    // `returning` rather than the affected-row count, which PGlite does not report for DELETE.
    const rows = await trx('project_repositories').where({ id, org_id: orgId, project_id: projectId }).delete().returning('*') as Row[];
    if (rows.length === 0) return undefined;
    const repository = toRecord(rows[0]!);
    await audit(trx, repository);
    return repository;
  });
}

/**
 * The project's repository a dispatch names: by id, else by name, else by URL (exactly as registered). A name never
 * holds ':' or '/', so it cannot be mistaken for a URL; an id wins over a name that happens to look like one.
 */
export async function resolveRepository(db: Knex, orgId: string, projectId: string, reference: string): Promise<RepositoryRecord | undefined> {
  const byId = uuidPattern.test(reference);
  const row = await db('project_repositories').where({ org_id: orgId, project_id: projectId })
    .andWhere((q) => {
      if (byId) q.where('id', reference.toLowerCase());
      q.orWhere('name', reference).orWhere('url', reference);
    })
    .orderByRaw(`${byId ? '(id::text = ?) desc, ' : ''}(name = ?) desc`, byId ? [reference.toLowerCase(), reference] : [reference])
    .first();
  return row ? toRecord(row as Row) : undefined;
}

