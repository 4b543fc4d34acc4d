/**
 * The comment a session's end leaves on its tracker issue (spec 3.1, 6.5; decision 0028): what happened, how long it
 * took, what it cost, the pull request it opened (decision 0076), the last lines the agent printed, and where to read
 * the rest. Markdown, as both trackers render.
 */
export const OUTPUT_LINES = 15;
const OUTPUT_CHARS = 3_000;

export interface CommentFacts {
  readonly kind: 'terminal' | 'stop';
  readonly sessionId: string;
  readonly sessionStatus: string;
  readonly durationMs: number | null;
  readonly costUsd: number;
  /** The run's kept output (the last 64 KiB), or null when the agent printed nothing. */
  readonly output: string | null;
  /** The session's page in the console, when the deployment knows its public URL. */
  readonly link: string | null;
  /** The pull request the run opened (decision 0076), if it did. */
  readonly pullRequest?: { readonly number: number; readonly url: string } | null;
}

export function commentBody(f: CommentFacts): string {
  const heading = f.kind === 'stop'
    ? `**Stop signal received**: Troupe session \`${f.sessionId}\` was stopped.`
    : `Troupe session \`${f.sessionId}\` **${f.sessionStatus}**.`;
  const lines = [heading, '', `- Status: ${f.sessionStatus}`, `- Duration: ${duration(f.durationMs)}`, `- Cost: $${f.costUsd.toFixed(2)}`];
  if (f.pullRequest) lines.push(`- Pull request: [#${f.pullRequest.number}](${f.pullRequest.url})`);
  const tail = lastLines(f.output);
  if (tail !== null) lines.push('', 'Last output:', '```', tail.replaceAll('```', "'''"), '```');
  if (f.link !== null) lines.push('', `[Open the session](${f.link})`);
  return lines.join('\n');
}

function lastLines(output: string | null): string | null {
  if (output === null) return null;
  const lines = output.replace(/\s+$/, '').split('\n');
  const tail = lines.slice(-OUTPUT_LINES).join('\n');
  if (tail.trim() === '') return null;
  return tail.length > OUTPUT_CHARS ? tail.slice(-OUTPUT_CHARS) : tail;
}

function duration(ms: number | null): string {
  if (ms === null) return 'not started';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}
