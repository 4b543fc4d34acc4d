/**
 * What codex's tokens cost: codex reports tokens and no money, so the worker prices them (issue 34 §1). USD per
 * million tokens, by model; input tokens that hit the prompt cache are billed at `cachedInput`. The defaults are
 * OpenAI's list prices for the models codex offered when this table was written (mid 2026; see
 * ops/decisions/0073-agent-presets.md); an operator overrides or extends them with `--price-table FILE`.
 */
export interface ModelPrice {
  readonly input: number;
  readonly cachedInput: number;
  readonly output: number;
}

export interface PriceTable {
  /** The model priced when neither `--agent-args` nor codex's config names one. */
  readonly defaultModel: string;
  readonly models: ReadonlyMap<string, ModelPrice>;
}

const price = (input: number, cachedInput: number, output: number): ModelPrice => ({ input, cachedInput, output });

export const defaultPrices: PriceTable = {
  defaultModel: 'gpt-5.5',
  models: new Map([
    ['gpt-5.5', price(5, 0.5, 30)],
    ['gpt-5.4', price(2.5, 0.25, 15)],
    ['gpt-5.4-mini', price(0.75, 0.075, 4.5)],
    ['gpt-5.4-nano', price(0.2, 0.02, 1.25)],
    ['gpt-5.3-codex', price(1.75, 0.175, 14)],
    ['gpt-5.2-codex', price(1.75, 0.175, 14)],
    ['gpt-5.2', price(1.75, 0.175, 14)],
    ['gpt-5.1-codex-max', price(1.25, 0.125, 10)],
    ['gpt-5.1-codex', price(1.25, 0.125, 10)],
    ['gpt-5.1-codex-mini', price(0.25, 0.025, 2)],
    ['gpt-5.1', price(1.25, 0.125, 10)],
    ['gpt-5-codex', price(1.25, 0.125, 10)],
    ['gpt-5', price(1.25, 0.125, 10)],
    ['gpt-5-mini', price(0.25, 0.025, 2)],
  ]),
};

export interface TokenCounts {
  /** All input tokens, the cached ones included (codex's `input_tokens`). */
  readonly inputTokens: number;
  readonly cachedInputTokens: number;
  readonly outputTokens: number;
}

export function costOfTokens(p: ModelPrice, t: TokenCounts): number {
  const cached = Math.min(t.cachedInputTokens, t.inputTokens);
  return ((t.inputTokens - cached) * p.input + cached * p.cachedInput + t.outputTokens * p.output) / 1e6;
}

export class PriceTableError extends Error {}

const MAX_MODELS = 500;
const MAX_USD_PER_MILLION = 10_000;
const modelNamePattern = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,99}$/;

/**
 * An operator's table over `base`: `{"defaultModel"?: NAME, "models": {NAME: {"input", "output", "cachedInput"?}}}`,
 * prices in USD per million tokens. A model it names replaces the base's entry; `cachedInput` defaults to `input`.
 * Anything else (an unknown member, a negative or absurd price, a default model no table prices) is refused whole.
 */
export function parsePriceTable(text: string, base: PriceTable = defaultPrices): PriceTable {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new PriceTableError(`is not JSON (${(err as Error).message})`);
  }
  const top = members(doc, 'the table', ['defaultModel', 'models']);
  const models = new Map(base.models);
  if (top.models !== undefined) {
    const entries = Object.entries(members(top.models, '"models"'));
    if (entries.length > MAX_MODELS) throw new PriceTableError(`"models" names ${entries.length} models; at most ${MAX_MODELS}`);
    for (const [name, entry] of entries) {
      if (!modelNamePattern.test(name)) throw new PriceTableError(`${JSON.stringify(name).slice(0, 110)} is not a model name (letters, digits and . _ : / @ + -, at most 100)`);
      const where = `models[${JSON.stringify(name)}]`;
      const fields = members(entry, where, ['input', 'cachedInput', 'output']);
      const input = usd(fields.input, `${where}.input`);
      const output = usd(fields.output, `${where}.output`);
      const cachedInput = fields.cachedInput === undefined ? input : usd(fields.cachedInput, `${where}.cachedInput`);
      models.set(name, { input, cachedInput, output });
    }
  }
  const defaultModel = top.defaultModel === undefined ? base.defaultModel : top.defaultModel;
  if (typeof defaultModel !== 'string' || !models.has(defaultModel)) {
    throw new PriceTableError(`"defaultModel" must name a model the table prices, not ${JSON.stringify(defaultModel)?.slice(0, 110)}`);
  }
  return { defaultModel, models };
}

function members(v: unknown, what: string, allowed?: readonly string[]): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new PriceTableError(`${what} must be a JSON object`);
  const record = v as Record<string, unknown>;
  const unknown = allowed && Object.keys(record).find((k) => !allowed.includes(k));
  if (unknown !== undefined) throw new PriceTableError(`${what} has an unknown member ${JSON.stringify(unknown).slice(0, 110)} (allowed: ${allowed!.join(', ')})`);
  return record;
}

function usd(v: unknown, where: string): number {
  if (v === undefined) throw new PriceTableError(`${where} is missing (USD per million tokens)`);
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MAX_USD_PER_MILLION) {
    throw new PriceTableError(`${where} must be USD per million tokens, a number from 0 to ${MAX_USD_PER_MILLION}, not ${JSON.stringify(v)?.slice(0, 60)}`);
  }
  return v;
}
