import { betaSample, seededRandom } from './random.js';

/**
 * Provider routing as a Beta–Bernoulli bandit (decision 0013). Each (provider, workType) arm has a Beta
 * posterior over its success probability, starting from the uniform prior Beta(1, 1); every terminal session
 * run adds one to alpha (completed) or beta (failed or stopped). A dispatch without a provider draws one sample
 * per candidate arm and takes the largest (Thompson sampling), seeded by the request id so a decision can be
 * replayed exactly from what was recorded.
 */

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

/**
 * Picks the provider for `workType` among `candidates` (posteriors of that work type; a provider the org has used
 * for other work types but never this one enters with the prior). Candidates are sorted by provider first, so
 * the draw order, and therefore the choice, depends only on the seed and the posteriors, never on row order.
 * Ties (vanishingly rare with continuous draws) go to the provider sorting first. Undefined without candidates.
 */
export function chooseArm(workType: string, candidates: readonly ArmPosterior[], seed: string): ArmChoice | undefined {
  if (candidates.length === 0) return undefined;
  const sorted = [...candidates].sort((a, b) => (a.provider < b.provider ? -1 : a.provider > b.provider ? 1 : 0));
  const rng = seededRandom(seed);
  const draws = sorted.map((arm) => ({ provider: arm.provider, alpha: arm.alpha, beta: arm.beta, sample: betaSample(rng, arm.alpha, arm.beta) }));
  let best = draws[0]!;
  for (const d of draws) if (d.sample > best.sample) best = d;
  return { provider: best.provider, workType, seed, draws };
}
