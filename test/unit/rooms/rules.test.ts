import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { expect } from 'chai';

/**
 * The rooms' import rules are stated twice on purpose: as a table in their decision (for people) and as
 * `.dependency-cruiser.cjs` (for `npm run rooms`, a step of `npm test`). This keeps the two the same, so a rule
 * cannot be loosened in the config without the decision saying so.
 */
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
const decision = readFileSync(path.join(root, 'ops/decisions/0032-rooms-enforced.md'), 'utf8');

interface Rule { name: string; from: string; fromNot: string; to: string }

/** The rows of the decision's rule table: `| name | from | except | may not import |`, regexes in backticks. */
function rulesInDecision(text: string): Rule[] {
  const start = text.indexOf('<!-- rules -->');
  const end = text.indexOf('<!-- /rules -->');
  if (start < 0 || end < start) throw new Error('the decision has no <!-- rules --> table');
  const cell = (c: string) => c.trim().replace(/^`|`$/g, '').replace(/\\\|/g, '|');
  return text.slice(start, end).split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [name, from, fromNot, to] = line.slice(1, -1).split(/(?<!\\)\|/).map(cell);
      return { name: name!, from: from!, fromNot: fromNot === '—' ? '' : fromNot!, to: to! };
    });
}

function rulesInConfig(): Rule[] {
  const config = createRequire(import.meta.url)(path.join(root, '.dependency-cruiser.cjs')) as {
    forbidden: Array<{ name: string; severity: string; from: { path: string; pathNot?: string }; to: { path?: string; circular?: boolean } }>;
  };
  for (const rule of config.forbidden) expect(rule.severity, rule.name).to.equal('error');
  // A cycle rule names no target path: the decision's table says what it forbids in words.
  const target = (to: { path?: string; circular?: boolean }): string => to.path ?? (to.circular ? 'a cycle of value imports' : '');
  return config.forbidden.map((r) => ({ name: r.name, from: r.from.path, fromNot: r.from.pathNot ?? '', to: target(r.to) }));
}

describe('the rooms rules', () => {
  it('are the ones the decision records, every rule an error', () => {
    const recorded = rulesInDecision(decision);
    expect(recorded.length).to.be.greaterThan(5);
    expect(rulesInConfig()).to.deep.equal(recorded);
  });

  it('run before the unit tests in npm test', () => {
    const scripts = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.rooms).to.match(/^depcruise actors transport http storage schemas ops test\b/);
    expect(scripts.test!.indexOf('npm run rooms')).to.be.within(0, scripts.test!.indexOf('mocha'));
  });
});
