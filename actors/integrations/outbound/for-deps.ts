import type { Config } from '../../../ops/kernel/config.js';
import { OutboundGuard } from './guarded-request.js';

/** One guard per node configuration (`TROUPE_OUTBOUND_ALLOW` is read once). */
const guards = new WeakMap<Config, OutboundGuard>();
export function outboundGuardFor(config: Config): OutboundGuard {
  let guard = guards.get(config);
  if (!guard) guards.set(config, (guard = new OutboundGuard(config.outboundAllow)));
  return guard;
}
