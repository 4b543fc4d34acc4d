import { KeyedMutex } from './lock.js';

/**
 * What the worker process knows of its sessions' workspaces: one lock per worktree dir (prepare, finish and the
 * sweep of one session never interleave), and the worktrees prepared and not yet finished (never swept).
 */
export const sessionLocks = new KeyedMutex();
export const workspacesInUse = new Set<string>();
