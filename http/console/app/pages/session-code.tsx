import type { SessionDetail } from '../api-types.js';
import { money, Status } from '../ui/bits.js';
import { webLink } from '../web-link.js';

type Workspace = NonNullable<SessionDetail['workspace']>;
type Delivery = NonNullable<SessionDetail['pullRequestDelivery']>;

const shortSha = (sha: string) => sha.slice(0, 7);
const count = (n: number) => n.toLocaleString('en-US');

/** "2 files, +14 −3", as git's diffstat says it (a real minus sign, not a hyphen). */
export const diffstat = (w: Pick<Workspace, 'filesChanged' | 'insertions' | 'deletions'>) =>
  `${count(w.filesChanged)} ${w.filesChanged === 1 ? 'file' : 'files'}, +${count(w.insertions)} \u2212${count(w.deletions)}`;

/**
 * What the session's agent did on code, as its worker reported it for the current run: the agent and its
 * conversation, tokens and cost, the repository and ref it started from, the branch it committed to and pushed, and
 * the pull request that followed. Every member is absent until reported, and so is its line; with none, nothing.
 */
export function SessionCode({ s }: { s: SessionDetail }) {
  const { agent, usage, workspace, pullRequest } = s;
  const delivery = s.pullRequestDelivery ?? null;
  const repository = s.repository ?? null;
  if (!agent && !usage && !workspace && !pullRequest && !delivery && !repository && !s.ref) return null;
  return (
    <section aria-labelledby="code-title" class="session-code">
      <h2 id="code-title">Agent and code</h2>
      <dl class="facts">
        {agent ? <><dt>Agent</dt><dd data-agent>{agent.preset}</dd></> : null}
        {agent?.agentSessionId ? <><dt>Conversation</dt><dd><code>{agent.agentSessionId}</code></dd></> : null}
        {usage ? (
          <><dt>Tokens</dt><dd data-usage>{count(usage.inputTokens)} in · {count(usage.outputTokens)} out{usage.costUsd === null ? '' : ` · ${money(usage.costUsd)}`}</dd></>
        ) : null}
        {repository ? <><dt>Repository</dt><dd data-repository>{repository.name} <code class="muted">{repository.url}</code></dd></> : null}
        {s.ref ? <><dt>Ref</dt><dd><code data-ref>{s.ref}</code></dd></> : null}
        {workspace ? <WorkspaceFacts w={workspace} /> : null}
        {pullRequest || delivery ? <><dt>Pull request</dt><dd data-pull-request><PullRequest s={s} delivery={delivery} /></dd></> : null}
      </dl>
      {workspace && workspace.commits.length > 0 ? (
        <>
          <h3 id="commits-title">Commits</h3>
          <ol class="plain commits" aria-labelledby="commits-title">
            {workspace.commits.map((c) => <li key={c.sha}><code title={c.sha}>{shortSha(c.sha)}</code> {c.subject}</li>)}
          </ol>
        </>
      ) : null}
    </section>
  );
}

function WorkspaceFacts({ w }: { w: Workspace }) {
  return (
    <>
      <dt>Branch</dt>
      <dd><code data-branch>{w.branch}</code> <code class="muted" title={`${w.baseCommit}..${w.headCommit}`}>{shortSha(w.baseCommit)}..{shortSha(w.headCommit)}</code></dd>
      <dt>Changes</dt>
      <dd data-diffstat>{diffstat(w)}{w.dirty ? <> · <strong class="dirty">uncommitted changes left</strong></> : null}</dd>
      <dt>Push</dt>
      <dd data-push>{w.pushed ? 'pushed' : w.pushError ? <>not pushed: <span class="mono">{w.pushError}</span></> : 'not pushed'}</dd>
    </>
  );
}

/** The pull request as a link when its address is https; otherwise what became of the one owed, and why. */
function PullRequest({ s, delivery }: { s: SessionDetail; delivery: Delivery | null }) {
  if (s.pullRequest) {
    const href = webLink(s.pullRequest.url);
    return href?.startsWith('https:')
      ? <a href={href} rel="noreferrer noopener" target="_blank">#{s.pullRequest.number}</a>
      : <>#{s.pullRequest.number}</>;
  }
  if (!delivery) return null;
  const where = delivery.repository ? ` on ${delivery.repository}${delivery.head ? ` (${delivery.head}${delivery.base ? ` → ${delivery.base}` : ''})` : ''}` : '';
  return (
    <>
      <Status value={delivery.status} />{where}
      {delivery.status === 'failed' ? <span class="muted"> after {delivery.attempts} {delivery.attempts === 1 ? 'attempt' : 'attempts'}</span> : null}
      {delivery.lastError ? <>: <span data-pull-request-error>{delivery.lastError}</span></> : null}
    </>
  );
}
