import type { Knex } from 'knex';
import type { Registry } from 'prom-client';
import type { Config } from '../../ops/kernel/config.js';
import type { Logger } from '../../ops/kernel/logger.js';
import type { Clock } from '../../ops/kernel/clock.js';
import type { Secrets } from '../../ops/kernel/secrets.js';
import type { SnapshotStore } from '../../storage/snapshot-store.js';
import type { Cache } from '../../storage/cache.js';
import type { Transport } from '../../transport/port.js';
import type { Authorizer } from './identity/ports.js';
import type { IdentityAuthenticator } from './identity/authenticator.js';

/**
 * The node's long-lived machinery (writers, indexes, fan-outs, sweepers): one of each per node. Its members are declared
 * in ./node-services.ts by declaration merging, so that this file, which every service imports for `Deps`, imports no
 * service: no import loop runs through `Deps` (issue 33).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface NodeServices {}

/**
 * Everything a handler or an actor effect may use, built once in `ops/main.ts` and passed explicitly.
 * There is no container: a test builds the same object from the pieces it wants.
 */
export interface Deps {
  readonly config: Config;
  readonly log: Logger;
  readonly clock: Clock;
  readonly secrets: Secrets;
  readonly db: Knex;
  readonly snapshots: SnapshotStore;
  readonly cache: Cache;
  readonly transport: Transport;
  readonly metrics: Registry;
  readonly auth: IdentityAuthenticator;
  readonly authz: Authorizer;
  /** The node's long-lived machinery (writers, indexes, fan-outs, sweepers): one of each per node. */
  readonly services: NodeServices;
  /** Asks the owner of `address` (an actor) through the transport, with the configured default deadline. */
  ask<R = unknown>(address: string, message: unknown, timeoutMs?: number): Promise<R>;
}
