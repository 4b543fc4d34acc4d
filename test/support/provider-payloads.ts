import { randomInt, randomUUID } from 'node:crypto';

/**
 * Provider deliveries shaped like the providers' own published examples, trimmed to the fields around the ones
 * Troupe reads (GitHub: octokit/webhooks `payload-examples/api.github.com/{issues/opened, check_run/completed,
 * workflow_run/completed}.payload.json`; Vercel: "Webhooks API Reference", deployment events). Each call makes a
 * fresh delivery: new ids, so two calls are two deliveries.
 */

const githubUser = (login: string, type: 'User' | 'Bot' | 'Organization') => ({
  login, id: randomInt(1, 2 ** 31), node_id: 'MDQ6VXNlcjIxMDMxMDY3', url: `https://api.github.com/users/${login}`,
  html_url: `https://github.com/${login}`, type, site_admin: false,
});

const githubRepository = (fullName: string, id: number) => ({
  id, node_id: 'MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=', name: fullName.split('/')[1], full_name: fullName, private: false,
  owner: githubUser(fullName.split('/')[0]!, 'Organization'), html_url: `https://github.com/${fullName}`,
  url: `https://api.github.com/repos/${fullName}`, default_branch: 'main',
});

export interface GithubIssueOptions {
  readonly repo?: string;
  readonly repositoryId?: number;
  readonly number?: number;
  readonly title?: string;
  readonly body?: string | null;
  /** GitHub always sends one; omitted only to test the fallback key. */
  readonly nodeId?: string | null;
  readonly senderType?: 'User' | 'Bot';
}

/** An `issues` delivery with action `opened` (header `X-GitHub-Event: issues`). */
export function githubIssueOpened(o: GithubIssueOptions = {}): Record<string, unknown> {
  const repo = o.repo ?? 'Codertocat/Hello-World';
  const number = o.number ?? randomInt(1, 100_000);
  const sender = githubUser(o.senderType === 'Bot' ? 'troupe-agent[bot]' : 'Codertocat', o.senderType ?? 'User');
  const issue: Record<string, unknown> = {
    url: `https://api.github.com/repos/${repo}/issues/${number}`, html_url: `https://github.com/${repo}/issues/${number}`,
    id: randomInt(1, 2 ** 31), number, title: o.title ?? 'Spelling error in the README file', user: sender,
    labels: [], state: 'open', locked: false, assignee: null, assignees: [], milestone: null, comments: 0,
    created_at: '2019-05-15T15:20:18Z', updated_at: '2019-05-15T15:20:18Z', closed_at: null, author_association: 'OWNER',
    active_lock_reason: null, body: o.body === undefined ? "It looks like you accidently spelled 'commit' with two 't's." : o.body,
  };
  if (o.nodeId !== null) issue.node_id = o.nodeId ?? `I_kwDO${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  return { action: 'opened', issue, repository: githubRepository(repo, o.repositoryId ?? 186853002), sender };
}

/** A `pull_request` delivery with action `opened`: GitHub's own event, never an `issues` one. */
export function githubPullRequestOpened(): Record<string, unknown> {
  const sender = githubUser('Codertocat', 'User');
  return {
    action: 'opened', number: 2,
    pull_request: {
      url: 'https://api.github.com/repos/Codertocat/Hello-World/pulls/2', id: 279147437, number: 2, state: 'open',
      title: 'Update the README with new information.', user: sender, body: 'This is a pretty simple change.',
      head: { ref: 'changes', sha: 'ec26c3e57ca3a959ca5aad62de7213c562f8c821' }, base: { ref: 'master', sha: 'f95f852bd8fca8fcc58a9a2d6c842781e32a215e' },
    },
    repository: githubRepository('Codertocat/Hello-World', 186853002), sender,
  };
}

export interface GithubRunOptions {
  readonly branch: string;
  readonly conclusion: string;
  readonly name?: string;
  readonly htmlUrl?: string;
}

/** A `check_run` delivery with action `completed`; the branch is the check suite's `head_branch`. */
export function githubCheckRunCompleted(o: GithubRunOptions): Record<string, unknown> {
  const id = randomInt(1, 2 ** 31);
  const sha = 'ec26c3e57ca3a959ca5aad62de7213c562f8c821';
  return {
    action: 'completed',
    check_run: {
      id, node_id: 'MDg6Q2hlY2tSdW4xMjg2MjAyMjg=', head_sha: sha, external_id: '',
      url: `https://api.github.com/repos/Codertocat/Hello-World/check-runs/${id}`,
      html_url: o.htmlUrl ?? `https://github.com/Codertocat/Hello-World/runs/${id}`, details_url: 'https://octocoders.io',
      status: 'completed', conclusion: o.conclusion, started_at: '2019-05-15T15:21:12Z', completed_at: '2019-05-15T15:21:12Z',
      output: { title: null, summary: null, text: null, annotations_count: 0 },
      name: o.name ?? 'Octocoders-linter',
      check_suite: {
        id: 118578147, node_id: 'MDEwOkNoZWNrU3VpdGUxMTg1NzgxNDc=', head_branch: o.branch, head_sha: sha, status: 'completed',
        conclusion: o.conclusion, url: 'https://api.github.com/repos/Codertocat/Hello-World/check-suites/118578147',
        before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246', after: sha, pull_requests: [],
      },
      pull_requests: [],
    },
    repository: githubRepository('Codertocat/Hello-World', 186853002), sender: githubUser('Codertocat', 'User'),
  };
}

/** A `workflow_run` delivery with action `completed`; the run's `name` is empty as in GitHub's example. */
export function githubWorkflowRunCompleted(o: GithubRunOptions): Record<string, unknown> {
  const id = randomInt(1, 2 ** 31);
  return {
    action: 'completed',
    repository: githubRepository('octo-org/octo-repo', 300029405),
    sender: githubUser('Codertocat', 'User'),
    workflow: {
      id: 2823525, node_id: 'MDg6V29ya2Zsb3cyODIzNTI1', name: o.name ?? 'test', path: '.github/workflows/test.yml', state: 'active',
      html_url: 'https://github.com/octo-org/octo-repo/blob/master/.github/workflows/test.yml',
    },
    workflow_run: {
      name: '', id, node_id: 'MDExOldvcmtmbG93UnVuMjg5NzgyNDUx', check_suite_id: 1291536064, conclusion: o.conclusion,
      created_at: '2020-10-05T16:33:24Z', event: 'push', head_branch: o.branch, head_sha: '3484a3fb816e0859fd6e1cea078d76385ff50625',
      html_url: o.htmlUrl ?? `https://github.com/octo-org/octo-repo/actions/runs/${id}`, run_number: 42, status: 'completed',
      workflow_id: 2823525, pull_requests: [], updated_at: '2020-10-05T16:34:24Z',
    },
  };
}

export interface VercelDeploymentOptions {
  readonly type?: string;
  /** Which git provider's key carries the branch in `deployment.meta`. */
  readonly git?: 'github' | 'gitlab' | 'bitbucket';
  readonly branch: string;
  readonly url?: string;
}

/** A Vercel deployment event (default `deployment.error`); `id` is the delivery id. */
export function vercelDeployment(o: VercelDeploymentOptions): { id: string; body: Record<string, unknown> } {
  const id = `evt_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
  const git = o.git ?? 'github';
  const deploymentId = `dpl_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
  return {
    id,
    body: {
      id, type: o.type ?? 'deployment.error', createdAt: 1716220800000, region: 'iad1',
      payload: {
        team: { id: 'team_xyz789' }, user: { id: 'usr_abc123' },
        deployment: {
          id: deploymentId, name: 'acme-web', url: o.url ?? 'acme-web-3kd8s2.vercel.app',
          meta: { [`${git}CommitRef`]: o.branch, [`${git}CommitSha`]: 'a'.repeat(40), [`${git}CommitMessage`]: 'fix the build' },
        },
        links: { deployment: `https://vercel.com/acme/acme-web/${deploymentId}`, project: 'https://vercel.com/acme/acme-web' },
        target: null, project: { id: 'prj_abcdef123' }, plan: 'pro', regions: ['iad1'],
      },
    },
  };
}
