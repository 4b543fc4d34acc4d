// Invariant: a GitHub issue reference is `owner/repo#number` with GitHub's own name rules (owner: letters, digits,
// `-`; repo: letters, digits, `-`, `_`, `.`, never `.` or `..`), so no part of it can be a dot segment or carry a
// separator; anything with a `#` that breaks those rules is refused as a trackerIssue, and the comment URL built from
// a reference is always exactly `{base}/repos/{owner}/{repo}/issues/{n}/comments` or nothing (issue 30, finding 7).
import { expect } from 'chai';
import { parseGithubIssueRef, trackerIssueProblem } from '../../../storage/sessions/github-issue-ref.js';
import { githubCommentsUrl } from '../../../actors/services/integrations/trackers/github-comments-url.js';

const malformed = [
  '../..#2', 'acme/..#2', 'acme/.#2', '../api#2', './x#1', 'a%2F..#1', 'acme/%2e%2e#3', 'acme/api/../..#4', 'acme/api#0',
  'ac me/api#1', 'acme/api?x=1#1', 'acme/a\\pi#1', 'acme/api#1/..', '/api#1', 'acme/#1', 'acme/api#',
];

describe('GitHub issue references', () => {
  it('parses the references GitHub can name', () => {
    expect(parseGithubIssueRef('acme/api#7')).to.deep.equal({ owner: 'acme', repo: 'api', number: 7 });
    expect(parseGithubIssueRef('Acme-Co/.github#12')).to.deep.equal({ owner: 'Acme-Co', repo: '.github', number: 12 });
    expect(parseGithubIssueRef('a/my_repo.js-2#3')).to.deep.equal({ owner: 'a', repo: 'my_repo.js-2', number: 3 });
  });

  for (const issue of malformed) {
    it(`refuses ${JSON.stringify(issue)} as a reference and as a trackerIssue`, () => {
      expect(parseGithubIssueRef(issue)).to.equal(null);
      expect(trackerIssueProblem(issue)).to.be.a('string').and.match(/owner\/repo#number/);
    });
  }

  it('leaves trackerIssues without a # (Linear identifiers, free labels) alone', () => {
    for (const issue of ['ENG-42', 'OPS-1', 'X', 'acme/api', '../..']) expect(trackerIssueProblem(issue), issue).to.equal(null);
    expect(trackerIssueProblem('acme/api#7')).to.equal(null);
  });

  it('builds the comments URL under the base path only', () => {
    expect(githubCommentsUrl('https://api.github.com', 'acme/api#7')).to.equal('https://api.github.com/repos/acme/api/issues/7/comments');
    expect(githubCommentsUrl('https://ghe.example/api/v3/', 'acme/.github#7')).to.equal('https://ghe.example/api/v3/repos/acme/.github/issues/7/comments');
    for (const issue of malformed) expect(githubCommentsUrl('https://ghe.example/api/v3', issue), issue).to.equal(null);
  });
});
