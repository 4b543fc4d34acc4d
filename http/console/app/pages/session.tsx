import { useEffect, useRef, useState } from 'preact/hooks';
import { post, type ApiError } from '../api.js';
import type { InterviewDeltaEvent, SessionDetail as Detail, SessionPromptRequest, SessionStatusEvent } from '../api-types.js';
import { asApiError, useApi, useEventStream, useInterval } from '../data.js';
import { Empty, ErrorNote, Live, Loading, money, PageHeader, Status, Time } from '../ui/bits.js';
import { actorName, useMe, type Me } from '../me.js';
import { SessionCode } from './session-code.js';
import { SessionTranscript } from './session-transcript.js';

const TERMINAL = ['completed', 'failed', 'stopped'];
/**
 * The event stream says when the status moves, not when a running agent takes a tool step or reports its usage; a
 * running session's detail is read again this often so those show while the person watches.
 */
const RUNNING_REREAD_MS = 10_000;

/**
 * One session: its status timeline (re-read whenever the org's event stream reports a change to it), the agent's
 * output as the worker streams it (the interview stream named by the session id), cost, the workflow version it
 * runs under, and Stop / Prompt for those allowed.
 */
export function SessionPage({ id }: { id: string }) {
  const me = useMe();
  const detail = useApi<Detail>(`/api/public/sessions/${encodeURIComponent(id)}`);
  const actions = useSessionActions(detail.reload);
  const projectId = detail.data?.project.id;
  const events = useEventStream(projectId ? `/api/sessions/events?projectId=${projectId}` : undefined, {
    'session.status': (data) => { if ((data as SessionStatusEvent).sessionId === id) detail.reload(); },
    reset: () => detail.reload(),
  });
  const output = useStreamedOutput(id, detail.data);
  useInterval(() => { if (detail.data?.status === 'running') detail.reload(); }, RUNNING_REREAD_MS);

  if (detail.error) return <><PageHeader title={`Session ${id}`} /><ErrorNote error={detail.error} /></>;
  const s = detail.data;
  if (!s) return <Loading what="the session" />;
  const live = !TERMINAL.includes(s.status);
  const shown = output.shown(s);

  return (
    <article aria-labelledby="page-title">
      <PageHeader title={`Session ${s.id}`}>
        <Status value={s.status} />
        <Live connected={events.connected && output.connected} />
      </PageHeader>
      <SessionFacts s={s} me={me} />
      <SessionCode s={s} />
      {s.error ? <p class="note note-error">The agent reported: {s.error}</p> : null}

      <section aria-labelledby="prompt-title">
        <h2 id="prompt-title">Prompt</h2>
        <blockquote class="prompt">{s.prompt}</blockquote>
      </section>

      {(s.can.stop && live) || s.can.prompt ? <SessionControl s={s} live={live} actions={actions} /> : null}

      <section aria-labelledby="output-title">
        <h2 id="output-title">Agent output</h2>
        {s.output?.truncated ? <p class="muted">Showing the last 64 KiB of {s.output.totalBytes} bytes.</p> : null}
        {shown === '' ? (
          <p class="muted">{live ? 'Waiting for the agent to stream its output… (shown as it arrives)' : 'The agent printed nothing.'}</p>
        ) : <pre class="output" aria-live="polite" data-tokens={output.tokens} tabIndex={0}>{shown}</pre>}
      </section>

      <SessionTranscript id={s.id} />
      <SessionTimeline timeline={s.timeline} />
      <SessionPromptsAndActivity s={s} />
    </article>
  );
}

/** Stop and Prompt: each re-reads the detail afterwards, and says what was done or shows the server's refusal. */
function useSessionActions(reload: () => void) {
  const [actionError, setActionError] = useState<ApiError | undefined>(undefined);
  const [notice, setNotice] = useState('');
  const act = async (what: string, call: () => Promise<unknown>) => {
    setActionError(undefined);
    setNotice('');
    try {
      await call();
      setNotice(what);
      reload();
    } catch (err) {
      setActionError(asApiError(err));
      reload();
    }
  };
  return { act, actionError, notice };
}

/** The agent's output as the worker streams it: the interview stream named by the session id. */
function useStreamedOutput(id: string, loaded: Detail | undefined) {
  // Everything streamed while the page is open, and what streamed since the detail (with its kept tail) last loaded.
  const [output, setOutput] = useState({ all: '', sinceLoad: '' });
  const tokens = useRef(0);
  // The detail carries the kept tail of the output; what streams in after each load of it is appended.
  useEffect(() => { setOutput((o) => ({ ...o, sinceLoad: '' })); }, [loaded]);
  const stream = useEventStream(`/api/interview/${encodeURIComponent(id)}/stream`, {
    'interview.delta': (data) => {
      const frame = data as InterviewDeltaEvent;
      tokens.current += frame.tokens.length;
      const text = frame.tokens.join('');
      setOutput((o) => ({ all: o.all + text, sinceLoad: o.sinceLoad + text }));
    },
  });
  return {
    connected: stream.connected,
    tokens: tokens.current,
    // The kept tail covers what streamed before the last load; without one (output relayed only as interview deltas)
    // the page shows what it saw stream.
    shown: (s: Detail) => (s.output ? s.output.tail + output.sinceLoad : output.all),
  };
}

function SessionFacts({ s, me }: { s: Detail; me: Me }) {
  return (
    <dl class="facts">
      <dt>Project</dt><dd>{s.project.name ?? s.project.id}</dd>
      <dt>Cost</dt><dd data-cost>{money(s.costUsd)}</dd>
      <dt>Worker</dt><dd>{s.worker ? `${s.worker.hostname ?? s.worker.id}${s.worker.holdsClaim ? '' : ' (released)'}` : 'none yet'}</dd>
      <dt>Workflow</dt>
      <dd>{s.workflowRun
        ? <a href={`/workflows/${s.workflowRun.workflowId}`}>pinned to version {s.workflowRun.version}</a>
        : 'dispatched directly (no workflow)'}</dd>
      <dt>Requested by</dt><dd>{s.requestedBy ? actorName(me, s.requestedBy) : 'unknown'}</dd>
      <dt>Created</dt><dd><Time at={s.createdAt} /></dd>
      {s.phase ? <><dt>Phase</dt><dd>{s.phase}</dd></> : null}
    </dl>
  );
}

function SessionControl({ s, live, actions }: { s: Detail; live: boolean; actions: ReturnType<typeof useSessionActions> }) {
  const { act, actionError, notice } = actions;
  return (
    <section class="card stack" aria-labelledby="control-title">
      <h2 id="control-title">Control</h2>
      {s.can.stop && live ? (
        <button type="button" class="button-danger" onClick={() => act('Stop signal sent.', () => post(`/api/public/sessions/${s.id}/stop`))}>Stop session</button>
      ) : null}
      {s.can.prompt ? <PromptForm onSend={(text) => act('Prompt sent.', () => post(`/api/public/sessions/${s.id}/prompt`, { prompt: text } satisfies SessionPromptRequest))} /> : null}
      <ErrorNote error={actionError} title="Refused" />
      {notice ? <p class="note" role="status">{notice}</p> : null}
    </section>
  );
}

function SessionTimeline({ timeline }: { timeline: Detail['timeline'] }) {
  return (
    <section aria-labelledby="timeline-title">
      <h2 id="timeline-title">Timeline</h2>
      {timeline.length === 0 ? <Empty title="No status changes recorded yet." /> : (
        <ol class="timeline">
          {timeline.map((t) => (
            <li key={`${t.at}-${t.status}`} data-status={t.status}>
              <Status value={t.status} /> <span class="muted">{t.from === 'absent' ? 'dispatched' : `from ${t.from}`}</span> <Time at={t.at} />
              {t.run > 1 ? <span class="muted"> · run {t.run}</span> : null}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

function SessionPromptsAndActivity({ s }: { s: Detail }) {
  return (
    <>
      {s.prompts.some((p) => p.queued) ? (
        <section aria-labelledby="prompts-title">
          <h2 id="prompts-title">Prompts sent</h2>
          <ul class="plain">{s.prompts.filter((p) => p.queued).map((p) => <li key={p.id}><Time at={p.createdAt} />: {p.text} {p.deliveredAt ? <span class="muted">(delivered)</span> : <span class="muted">(queued)</span>}</li>)}</ul>
        </section>
      ) : null}
      {s.activities.length > 0 ? (
        <section aria-labelledby="activity-title">
          <h2 id="activity-title">Activity</h2>
          <ul class="plain activities">{s.activities.map((a) => <Activity key={a.id} activity={a} />)}</ul>
        </section>
      ) : null}
    </>
  );
}

/** A tool step (`Tool: summary`, kind `tool`) is marked as one, its tool named apart from what it was asked. */
function Activity({ activity: a }: { activity: Detail['activities'][number] }) {
  if (a.kind !== 'tool') return <li data-kind={a.kind}><Time at={a.createdAt} />: {a.body}</li>;
  const colon = a.body.indexOf(': ');
  const [tool, summary] = colon > 0 ? [a.body.slice(0, colon), a.body.slice(colon + 2)] : [a.body, ''];
  return <li data-kind="tool"><Time at={a.createdAt} /> <span class="badge">tool</span> <code>{tool}</code> {summary}</li>;
}

function PromptForm({ onSend }: { onSend: (text: string) => Promise<void> }) {
  const [text, setText] = useState('');
  return (
    <form class="inline-form" onSubmit={async (e) => { e.preventDefault(); await onSend(text); setText(''); }}>
      <label for="prompt-text">Send a prompt</label>
      <input id="prompt-text" type="text" required value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
      <button type="submit">Send</button>
    </form>
  );
}
