// Invariant: the seeded generator is a pure function of its seed (same seed, same sequence; different seeds,
// different sequences), and the Gamma and Beta samplers built on it have the moments of their distributions, so
// Thompson sampling over recorded posteriors can be replayed exactly and explores in the right proportions.
import { expect } from 'chai';
import { betaSample, gamma, seededRandom } from '../../../actors/services/analytics/random.js';
import { chooseArm } from '../../../actors/services/analytics/router.js';

const draws = (seed: string, n: number): number[] => {
  const rng = seededRandom(seed);
  return Array.from({ length: n }, () => rng.next());
};

function moments(xs: readonly number[]): { mean: number; variance: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const variance = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1);
  return { mean, variance };
}

describe('seeded random source', () => {
  it('replays the same sequence for the same seed and another for another seed', () => {
    expect(draws('req-1', 50)).to.deep.equal(draws('req-1', 50));
    expect(draws('req-1', 50)).to.not.deep.equal(draws('req-2', 50));
  });

  it('is uniform on [0, 1): every value in range, deciles evenly filled', () => {
    const xs = draws('uniformity', 100_000);
    const deciles = new Array<number>(10).fill(0);
    expect(xs.filter((x) => !(x >= 0 && x < 1))).to.deep.equal([]);
    for (const x of xs) deciles[Math.floor(x * 10)]!++;
    // Chi-square with 9 degrees of freedom: 27.88 is the 0.1% critical value.
    const chi = deciles.reduce((s, c) => s + (c - 10_000) ** 2 / 10_000, 0);
    expect(chi).to.be.below(27.88);
  });
});

describe('gamma and beta samplers', () => {
  for (const shape of [0.4, 1, 2.5, 30]) {
    it(`Gamma(${shape}) has mean and variance equal to its shape`, () => {
      const rng = seededRandom(`gamma-${shape}`);
      const { mean, variance } = moments(Array.from({ length: 40_000 }, () => gamma(rng, shape)));
      expect(mean).to.be.closeTo(shape, shape * 0.05 + 0.01);
      expect(variance).to.be.closeTo(shape, shape * 0.1 + 0.02);
    });
  }

  for (const [a, b] of [[1, 1], [2, 8], [30, 5], [0.5, 0.5]] as const) {
    it(`Beta(${a}, ${b}) has the mean a/(a+b) and variance ab/((a+b)²(a+b+1))`, () => {
      const rng = seededRandom(`beta-${a}-${b}`);
      const xs = Array.from({ length: 40_000 }, () => betaSample(rng, a, b));
      expect(xs.filter((x) => !(x >= 0 && x <= 1))).to.deep.equal([]);
      const { mean, variance } = moments(xs);
      const expectedMean = a / (a + b);
      const expectedVariance = (a * b) / ((a + b) ** 2 * (a + b + 1));
      expect(mean).to.be.closeTo(expectedMean, 0.01);
      expect(variance).to.be.closeTo(expectedVariance, expectedVariance * 0.08);
    });
  }

  it('refuses a shape that is not positive and finite', () => {
    const rng = seededRandom('x');
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => gamma(rng, bad)).to.throw(RangeError);
  });
});

describe('Thompson sampling over arms', () => {
  const arms = [
    { provider: 'openai', workType: 'bugfix', alpha: 3, beta: 9 },
    { provider: 'anthropic', workType: 'bugfix', alpha: 40, beta: 4 },
    { provider: 'local', workType: 'bugfix', alpha: 1, beta: 1 },
  ];

  it('is deterministic given the seed, whatever order the candidates come in', () => {
    const one = chooseArm('bugfix', arms, 'req-42');
    const two = chooseArm('bugfix', [...arms].reverse(), 'req-42');
    expect(one).to.deep.equal(two);
    expect(one!.draws.map((d) => d.provider)).to.deep.equal(['anthropic', 'local', 'openai']);
  });

  it('picks arms in proportion to their probability of being best', () => {
    const counts: Record<string, number> = {};
    for (let i = 0; i < 4000; i++) {
      const c = chooseArm('bugfix', arms, `req-${i}`)!;
      counts[c.provider] = (counts[c.provider] ?? 0) + 1;
    }
    // P(best) estimated independently by Monte Carlo from the same samplers under other seeds.
    const rng = seededRandom('independent');
    const wins: Record<string, number> = {};
    for (let i = 0; i < 20_000; i++) {
      const samples = arms.map((a) => ({ p: a.provider, s: betaSample(rng, a.alpha, a.beta) }));
      const best = samples.reduce((x, y) => (y.s > x.s ? y : x));
      wins[best.p] = (wins[best.p] ?? 0) + 1;
    }
    for (const a of arms) expect((counts[a.provider] ?? 0) / 4000).to.be.closeTo((wins[a.provider] ?? 0) / 20_000, 0.03);
    expect(counts.anthropic).to.be.greaterThan(counts.openai ?? 0);
  });

  it('has nothing to choose without candidates', () => {
    expect(chooseArm('bugfix', [], 'seed')).to.equal(undefined);
  });
});
