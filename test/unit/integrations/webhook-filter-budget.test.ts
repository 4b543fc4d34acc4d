// Invariant (issue 30, item 1): a webhook trigger's filter is matched under a visit budget. A filter whose paths
// could visit more than FILTER_VISIT_LIMIT values is refused when its version is made; a delivery stops matching
// once its budget is spent and says so; a wildcard reads at most MAX_WILDCARD_ELEMENTS elements; matching answers
// as before on ordinary payloads.
import { expect } from 'chai';
import {
  FILTER_VISIT_LIMIT, filterMatches, filterVisitBound, MAX_WILDCARD_ELEMENTS, pathVisitBound, VisitBudget,
} from '../../../actors/services/integrations/webhooks/filter-budget.js';
import { triggerOf } from '../../../actors/kinds/workflow/trigger.js';
import { TroupeError } from '../../../ops/kernel/errors.js';

const plenty = () => new VisitBudget(1_000_000);

describe('webhook trigger filters under a visit budget', () => {
  const body = { repository: { full_name: 'acme/api', private: true }, issue: { number: 7, labels: [{ name: 'triage' }, { name: 'bug' }] } };

  it('matches ordinary payloads by dotted path, index and wildcard', () => {
    expect(filterMatches({}, body, plenty())).to.equal(true);
    expect(filterMatches({ 'repository.full_name': 'acme/api', 'repository.private': true }, body, plenty())).to.equal(true);
    expect(filterMatches({ 'repository.full_name': ['acme/web', 'acme/api'] }, body, plenty())).to.equal(true);
    expect(filterMatches({ 'issue.labels.*.name': 'bug' }, body, plenty())).to.equal(true);
    expect(filterMatches({ 'issue.labels.0.name': 'bug' }, body, plenty())).to.equal(false);
    expect(filterMatches({ 'issue.number': '7' }, body, plenty())).to.equal(false);
    expect(filterMatches({ 'repository.full_name': 'acme/api', 'issue.missing': 'x' }, body, plenty())).to.equal(false);
    expect(filterMatches({ 'constructor.name': 'Object' }, body, plenty())).to.equal(false);
  });

  it('bounds what one path can visit, whatever the payload', () => {
    expect(pathVisitBound('repository.full_name')).to.equal(3);
    expect(pathVisitBound('issue.labels.*.name')).to.equal(1 + 2 + MAX_WILDCARD_ELEMENTS * 2);
    expect(filterVisitBound({ a: 1, 'b.c': 2 })).to.equal(5);
    // Counted, not estimated: a full tree of arrays at every wildcard makes exactly the bound's visits.
    const width = MAX_WILDCARD_ELEMENTS + 5;
    const tree = { a: Array.from({ length: width }, () => Array.from({ length: width }, () => 0)) };
    const exact = new VisitBudget(pathVisitBound('a.*.*'));
    expect(filterMatches({ 'a.*.*': 1 }, tree, exact)).to.equal(false);
    expect(exact.spent).to.equal(true);
    expect(filterMatches({ 'a.*.*': 1 }, tree, new VisitBudget(pathVisitBound('a.*.*') - 1))).to.equal(undefined);
  });

  it('stops when the delivery budget is spent, and answers undefined rather than a guess', () => {
    const wide = { items: Array.from({ length: 50 }, (_, i) => ({ v: i })) };
    expect(filterMatches({ 'items.*.v': 49 }, wide, new VisitBudget(20))).to.equal(undefined);
    expect(filterMatches({ 'items.*.v': 49 }, wide, new VisitBudget(200))).to.equal(true);
    const spent = new VisitBudget(1);
    spent.take();
    expect(spent.spent).to.equal(true);
    expect(filterMatches({ a: 1 }, { a: 1 }, spent)).to.equal(undefined);
  });

  it('reads only the first elements of an array under a wildcard', () => {
    const late = { xs: [...Array.from({ length: MAX_WILDCARD_ELEMENTS }, () => 'no'), 'yes'] };
    expect(filterMatches({ 'xs.*': 'yes' }, late, plenty())).to.equal(false);
    expect(filterMatches({ [`xs.${MAX_WILDCARD_ELEMENTS}`]: 'yes' }, late, plenty())).to.equal(true);
  });

  it('refuses a filter that could exceed the limit when the trigger is read, naming the field', () => {
    const deep = { 'a.*.*.*.*.*.*.*.*.*': 1 };
    expect(filterVisitBound(deep)).to.be.greaterThan(FILTER_VISIT_LIMIT);
    let refused: unknown;
    try {
      triggerOf({ type: 'webhook', provider: 'github', event: 'issues', filter: deep });
    } catch (err) {
      refused = err;
    }
    expect(refused).to.be.instanceOf(TroupeError);
    expect((refused as TroupeError).code).to.equal('VALIDATION_FAILED');
    expect((refused as TroupeError).message).to.match(/definitionYaml\.trigger\.filter.*could visit/);
    expect(triggerOf({ type: 'webhook', provider: 'github', event: 'issues', filter: { 'issue.labels.*.name': 'bug', 'pull_request.commits.*.files.*': 'x' } }))
      .to.deep.include({ type: 'webhook' });
  });
});
