import type { Knex } from 'knex';

/**
 * One schema change, applied once in order by ./runner.ts. Names are permanent: knex records them in `knex_migrations`.
 * Its own file, so that each migration and the list in ./index.ts that imports them all do not import each other.
 */
export interface Migration {
  readonly name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}
