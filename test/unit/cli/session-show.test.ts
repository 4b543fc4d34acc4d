// Invariant: `troupe session show` tells what the current run's worker reported (issue 34): the agent and its
// conversation, tokens, the branch with its commits and diffstat, the push or git's reason it was refused, and the
// pull request or why none was opened; a session without them shows none of those rows.
import { expect } from 'chai';
import { renderDetail } from '../../../ops/cli/commands/session.js';
import type { SessionDetail } from '../../../ops/cli/session-watch.js';

const base = {
  id: '402036cc4af8eb2f', status: 'completed', phase: null, run: 1, waitingForIssueLock: false,
  project: { id: 'p-1', name: 'default' }, worker: null, provider: null, workType: null, trackerIssue: null,
  repository: { id: 'r-1', name: 'demo', url: 'file:///tmp/origin.git', defaultBranch: 'main' }, ref: 'main', costUsd: 0.08,
  createdAt: '2026-12-07T16:29:07.692Z', finishedAt: null, error: null, prompt: 'Add notes', prompts: [], timeline: [], output: null,
  agent: null, usage: null, workspace: null, pullRequest: null, pullRequestDelivery: null,
};
const detail = (extra: Record<string, unknown>): SessionDetail => ({ ...base, ...extra }) as never;

describe('troupe session show: what the run reported', () => {
  it('shows the agent, tokens, branch, a refused push and the pull request delivery', () => {
    const text = renderDetail(detail({
      agent: { preset: 'claude-code', agentSessionId: 'conv-1' },
      usage: { inputTokens: 1200, outputTokens: 340, costUsd: 0.08 },
      workspace: {
        repository: 'r-1', branch: 'troupe/402036cc4af8eb2f', baseCommit: 'a'.repeat(40), headCommit: 'b'.repeat(40),
        commits: [{ sha: 'b'.repeat(40), subject: 'Add notes' }], filesChanged: 1, insertions: 2, deletions: 0, dirty: true,
        pushed: false, pushError: 'pre-receive hook declined',
      },
      pullRequestDelivery: { status: 'skipped', repository: null, head: null, base: null, attempts: 0, lastError: 'the repository is not on GitHub' },
    }));
    expect(text).to.match(/^agent +claude-code \(conversation conv-1\)$/m);
    expect(text).to.match(/^tokens +1200 in · 340 out$/m);
    expect(text).to.match(/^branch +troupe\/402036cc4af8eb2f aaaaaaa\.\.bbbbbbb: 1 commit\(s\), 1 file\(s\) \+2 −0, uncommitted changes left$/m);
    expect(text).to.match(/^push +refused: pre-receive hook declined$/m);
    expect(text).to.match(/^pull request +skipped: the repository is not on GitHub$/m);
  });

  it('shows an opened pull request, and no run rows for a session without reports', () => {
    expect(renderDetail(detail({ pullRequest: { number: 7, url: 'https://github.com/acme/shop/pull/7' } }))).to.match(/^pull request +#7 https:\/\/github\.com\/acme\/shop\/pull\/7$/m);
    expect(renderDetail(detail({}))).to.not.match(/^(agent|tokens|branch|push|pull request) /m);
  });
});
