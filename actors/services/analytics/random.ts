import { createHash } from 'node:crypto';

/**
 * A small seeded random source for routing decisions that must be reproducible: the same seed (a dispatch's
 * request id) gives the same draws on any node and any run. Math.random cannot be seeded, and crypto random is
 * deliberately unreproducible, so this is sfc32 (Chris Doty-Humphrey's Small Fast Counting generator, 128-bit
 * state, passes PractRand to 2^40+), keyed by SHA-256 of the seed text.
 */
export interface SeededRandom {
  /** Uniform on [0, 1). */
  next(): number;
}

export function seededRandom(seed: string): SeededRandom {
  const digest = createHash('sha256').update(seed, 'utf8').digest();
  let a = digest.readUInt32LE(0);
  let b = digest.readUInt32LE(4);
  let c = digest.readUInt32LE(8);
  let d = digest.readUInt32LE(12);
  const step = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  };
  // Discard the first outputs: the counter-based mixing needs a few rounds to spread a low-entropy seed.
  for (let i = 0; i < 12; i++) step();
  return { next: () => step() / 4294967296 };
}

/** Standard normal by the Box–Muller transform; 1 - u keeps the logarithm's argument in (0, 1]. */
export function normal(rng: SeededRandom): number {
  const u1 = 1 - rng.next();
  const u2 = rng.next();
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

/**
 * Gamma(shape, 1) by Marsaglia and Tsang (2000). For shape < 1 it draws Gamma(shape + 1) and scales by
 * U^(1/shape), the standard boost, because the squeeze method needs shape ≥ 1.
 */
export function gamma(rng: SeededRandom, shape: number): number {
  if (!(shape > 0) || !Number.isFinite(shape)) throw new RangeError(`gamma shape must be positive and finite, got ${shape}`);
  if (shape < 1) return gamma(rng, shape + 1) * Math.pow(1 - rng.next(), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - rng.next();
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
  }
}

/** Beta(alpha, beta) as X / (X + Y) with X ~ Gamma(alpha), Y ~ Gamma(beta). */
export function betaSample(rng: SeededRandom, alpha: number, beta: number): number {
  const x = gamma(rng, alpha);
  const y = gamma(rng, beta);
  return x / (x + y);
}
