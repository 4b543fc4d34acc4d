import { betaSample, seededRandom } from './random.js';
import { PRIOR_ALPHA, PRIOR_BETA, type ArmPosterior, type ArmChoice } from '../../../schemas/analytics/router.js';
export { PRIOR_ALPHA, PRIOR_BETA, DEFAULT_WORK_TYPE, posteriorMean, type ArmPosterior, type ArmChoice } from '../../../schemas/analytics/router.js';

/**
 * Provider routing as a Beta–Bernoulli bandit (decision 0013). Each (provider, workType) arm has a Beta
 * posterior over its success probability, starting from the uniform prior Beta(1, 1); every terminal session
 * run adds one to alpha (completed) or beta (failed or stopped). A dispatch without a provider draws one sample
 * per candidate arm and takes the largest (Thompson sampling), seeded by the request id so a decision can be
 * replayed exactly from what was recorded.
 */

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

/**
 * The arm for a dispatch that names no provider, among the org's arms of every work type: every provider the org
 * has outcomes for competes, with its posterior for this work type (the prior if it has none yet). Undefined while
 * the org has no arms at all.
 */
export function chooseProvider(orgArms: readonly ArmPosterior[], workType: string, seed: string): ArmChoice | undefined {
  const byProvider = new Map<string, { alpha: number; beta: number }>();
  for (const arm of orgArms) {
    if (arm.workType === workType) byProvider.set(arm.provider, { alpha: arm.alpha, beta: arm.beta });
    else if (!byProvider.has(arm.provider)) byProvider.set(arm.provider, { alpha: PRIOR_ALPHA, beta: PRIOR_BETA });
  }
  return chooseArm(workType, [...byProvider].map(([provider, p]) => ({ provider, workType, ...p })), seed);
}
