/**
 * The title and body of the pull request a completed run opens (issue 34, decision 0076): the prompt's first line as
 * the title, and a body people can review from: where the session is, what it cost, and the commits it made.
 */
export const MAX_TITLE_CHARS = 120;
/** GitHub refuses bodies past 65,536 characters; the commit list is cut well before that. */
const MAX_BODY_CHARS = 60_000;
const FENCE = '```';

/** The prompt's first line that says something, at most 120 characters; the session when the prompt has none. */
export function pullRequestTitle(prompt: string, sessionId: string): string {
  const line = prompt.split(/\r?\n/).map((l) => l.trim()).find((l) => l !== '');
  if (line === undefined) return `Troupe session ${sessionId}`;
  const chars = [...line];
  return chars.length <= MAX_TITLE_CHARS ? line : `${chars.slice(0, MAX_TITLE_CHARS - 1).join('')}…`;
}

export interface PullRequestFacts {
  readonly sessionId: string;
  /** The session's page in the console, when the deployment knows its public URL. */
  readonly link: string | null;
  readonly costUsd: number;
  /** Newest first, as the worker reported them. */
  readonly commits: readonly { readonly sha: string; readonly subject: string }[];
  readonly filesChanged: number;
  readonly insertions: number;
  readonly deletions: number;
}

export function pullRequestBody(f: PullRequestFacts): string {
  const session = f.link === null ? `Troupe session \`${f.sessionId}\`` : `[Troupe session \`${f.sessionId}\`](${f.link})`;
  const lines = [
    `Opened by ${session}.`, '',
    `- Cost: $${f.costUsd.toFixed(2)}`,
    `- Changes: ${f.filesChanged} files, +${f.insertions} −${f.deletions}`,
    // In a code block: an agent's commit subject mentions nobody and renders no markup.
    '', `Commits (${f.commits.length}):`, FENCE,
  ];
  let length = lines.join('\n').length;
  // Oldest first, as a reviewer reads them.
  for (const c of [...f.commits].reverse()) {
    const line = `${c.sha.slice(0, 12)} ${c.subject.replace(/\s+/g, ' ').replaceAll(FENCE, "'''")}`;
    if (length + line.length + 1 > MAX_BODY_CHARS) {
      lines.push('…');
      break;
    }
    lines.push(line);
    length += line.length + 1;
  }
  lines.push(FENCE);
  return lines.join('\n');
}
