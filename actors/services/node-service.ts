import type { Deps } from './deps.js';

/** A service with a life: started and stopped by the node, in the order of `lifecycleOf`. */
export interface NodeService {
  readonly name: string;
  start(deps: Deps): void | Promise<void>;
  /** Flushes what is buffered, then releases timers and subscriptions. */
  stop(): Promise<void>;
}
