import { loadConfig } from '../../../ops/config.js';
import type { Config } from '../../../ops/kernel/config.js';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { startNode, type TroupeNode } from '../../../ops/node.js';
import { call, nodeInjector, type TestNode } from '../../support/node.js';
import type { TestDb } from '../../support/db.js';
import { engines } from '../../support/engines.js';

/**
 * Nodes started and stopped at will over one Postgres schema, with the same master key and admin token: a
 * restart, or a second node of the same cluster. `asTestNode` lets the session support helpers drive it.
 */
export interface NodeOverDb {
  readonly adminToken: string;
  boot(config?: Partial<Config>): Promise<TroupeNode>;
}

export function nodesOver(db: TestDb, label: string): NodeOverDb {
  const adminToken = generateAdminToken();
  const masterKey = generateMasterKey();
  let n = 0;
  return {
    adminToken,
    boot: (config = {}) => startNode(loadConfig({ DATABASE_URL: engines.postgres }, {
      port: 0, host: '127.0.0.1', nodeId: `${label}-${(n += 1)}`, masterKey, adminToken, logLevel: 'silent', shardCount: 4, ...config,
    }), { log: silentLogger(), searchPath: db.schema }),
  };
}

export function asTestNode(node: TroupeNode, adminToken: string): TestNode {
  return {
    node, url: node.url, adminToken, config: node.deps.config,
    call: (method, path, init = {}) => call(node.url, method, path, init),
    inject: nodeInjector(node),
    close: () => node.close(),
  };
}
