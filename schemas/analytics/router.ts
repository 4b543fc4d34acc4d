/**
 * The provider router's stored model (decision 0013): each (provider, workType) arm is a Beta posterior over its
 * success probability, kept in `router_arms` and bumped by every terminal run; a routed dispatch is recorded with
 * the draws that chose it. The bandit itself is actors/services/analytics/router.ts.
 */

/** Every arm starts from the uniform prior Beta(1, 1). */
export const PRIOR_ALPHA = 1;
export const PRIOR_BETA = 1;

/** The workType arms are keyed under when a dispatch names none. */
export const DEFAULT_WORK_TYPE = 'general';

export interface ArmPosterior {
  readonly provider: string;
  readonly workType: string;
  readonly alpha: number;
  readonly beta: number;
}

export interface ArmChoice {
  readonly provider: string;
  readonly workType: string;
  readonly seed: string;
  /** Every candidate's draw, in provider order, so the decision can be audited and replayed. */
  readonly draws: readonly { provider: string; alpha: number; beta: number; sample: number }[];
}

export const posteriorMean = (alpha: number, beta: number): number => alpha / (alpha + beta);
