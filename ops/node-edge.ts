import type { Registry } from 'prom-client';
import type { Deps } from '../actors/services/deps.js';
import type { Config } from './kernel/config.js';
import type { Logger } from './kernel/logger.js';
import { notsentLowatWarning } from './kernel/tcp-notsent-lowat.js';
import { startHttpServer, type HttpServer } from '../http/server.js';
import { allRoutes } from '../http/routes.js';
import { edgeHooksFor } from '../http/edge-hooks.js';
import { consoleRoutes } from '../http/console/routes.js';
import { loadConsoleAssets } from '../http/console/assets.js';
import { consoleDistDir } from '../http/console/location.js';

/** The node's HTTP edge: the API's route table and the console's pages on one uWS server. */
export async function startEdge(config: Config, deps: Deps, log: Logger, metrics: Registry): Promise<HttpServer> {
  const consoleAssets = loadConsoleAssets(consoleDistDir);
  if (consoleAssets.missing !== undefined) log.warn(consoleAssets.missing);
  const lowat = notsentLowatWarning();
  if (lowat) log.warn({ sysctl: 'net.ipv4.tcp_notsent_lowat', value: lowat.value }, lowat.msg);
  // The console's pages sit beside the API but outside its route table, so they are not in the OpenAPI document.
  const routes = [...allRoutes(), ...consoleRoutes<Deps>(consoleAssets)];
  return startHttpServer({
    routes, deps, host: config.host, port: config.port, log, metrics, trustProxyHops: config.trustProxyHops, ...edgeHooksFor(deps),
    streamsPerOrg: config.streamsPerOrg,
    admission: { concurrency: config.writesInFlight, queue: config.writesQueued, maxWaitMs: config.writeQueueWaitMs },
  });
}
