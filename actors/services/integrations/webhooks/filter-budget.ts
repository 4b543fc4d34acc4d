import type { FilterValue, WebhookTrigger } from '../../../../schemas/workflows/definition.js';

/**
 * A webhook trigger's filter, matched under a visit budget (issue 30; decision 0066). A filter path is walked through
 * the payload one segment at a time; every value it reaches is one visit. Without a bound, a path of wildcards over a
 * deep payload visits every node of it, for every entry of every candidate workflow: 200 such filters and one signed
 * 874 KB delivery held a node's event loop for 74 s.
 *
 * The bound has two halves:
 * - a `*` expands to at most MAX_WILDCARD_ELEMENTS elements of an array (the first ones), so the visits one path can
 *   make do not depend on the payload at all: `pathVisitBound` computes them, and a filter whose paths could make
 *   more than FILTER_VISIT_LIMIT is refused when its workflow version is created or published;
 * - a delivery shares one budget, DELIVERY_VISIT_BUDGET, among all the workflows it is matched against: once it is
 *   spent the remaining workflows are not considered, and the delivery's outcome says so.
 */
export const MAX_WILDCARD_ELEMENTS = 100;
export const FILTER_VISIT_LIMIT = 50_000;
export const DELIVERY_VISIT_BUDGET = 500_000;

/**
 * The most values `path` can visit in any payload: the payload itself, then each segment a step, each `*`
 * multiplying the branches.
 */
export function pathVisitBound(path: string): number {
  let branches = 1;
  let visits = 1;
  for (const segment of path.split('.')) {
    if (segment === '*') branches *= MAX_WILDCARD_ELEMENTS;
    visits += branches;
  }
  return visits;
}

export const filterVisitBound = (filter: WebhookTrigger['filter']): number =>
  Object.keys(filter).reduce((sum, path) => sum + pathVisitBound(path), 0);

/** Visits left for one delivery; every filter it matches draws on it. */
export class VisitBudget {
  constructor(private left: number) {}

  get spent(): boolean {
    return this.left <= 0;
  }

  /** Counts one visit; false once the budget is used up (the caller stops walking). */
  take(): boolean {
    if (this.left <= 0) return false;
    this.left -= 1;
    return true;
  }
}

/**
 * Whether every filter entry holds: a value its dotted path reaches (array elements by index, or `*` for any of the
 * first MAX_WILDCARD_ELEMENTS) equals the entry's value, or one of its values. A path that leads nowhere matches
 * nothing. `undefined` when the budget ran out before the answer was known.
 */
export function filterMatches(filter: WebhookTrigger['filter'], body: Record<string, unknown>, budget: VisitBudget): boolean | undefined {
  for (const [path, wanted] of Object.entries(filter)) {
    const allowed: readonly FilterValue[] = Array.isArray(wanted) ? wanted : [wanted as FilterValue];
    const found = reaches(body, path.split('.'), 0, allowed, budget);
    if (found === undefined) return undefined;
    if (!found) return false;
  }
  return true;
}

/** Whether a value at `path[at..]` below `value` is one of `allowed`; stops at the first that is. */
function reaches(value: unknown, path: readonly string[], at: number, allowed: readonly FilterValue[], budget: VisitBudget): boolean | undefined {
  if (!budget.take()) return undefined;
  if (at === path.length) return allowed.includes(value as FilterValue);
  const head = path[at]!;
  if (Array.isArray(value)) {
    if (head === '*') {
      const end = Math.min(value.length, MAX_WILDCARD_ELEMENTS);
      for (let i = 0; i < end; i++) {
        const found = reaches(value[i], path, at + 1, allowed, budget);
        if (found !== false) return found;
      }
      return false;
    }
    return /^\d+$/.test(head) && Number(head) < value.length ? reaches(value[Number(head)], path, at + 1, allowed, budget) : false;
  }
  if (typeof value !== 'object' || value === null || !Object.hasOwn(value, head)) return false;
  return reaches((value as Record<string, unknown>)[head], path, at + 1, allowed, budget);
}
