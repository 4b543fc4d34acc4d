import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { publicIdPattern } from '../../actors/kinds/session/index.js';
import { FOLLOW_POLL_MS, transcriptFollowers } from '../../actors/services/transcripts/followers.js';
import { findSession, type FoundSession } from '../../storage/sessions/queries.js';
import { readTranscript, SEARCH_WINDOW, transcriptHead, transcriptPages } from '../../storage/sessions/transcript.js';
import {
  TRANSCRIPT_PAGE_DEFAULT, TRANSCRIPT_PAGE_MAX, transcriptEntrySchema, transcriptPageReply, transcriptQuery, transcriptStreamQuery,
} from '../../schemas/sessions/transcript.js';
import { orgPrincipal } from '../principal.js';
import { route } from '../route.js';
import type { Route, RouteAuthorization, SseStream } from '../types.js';

/**
 * The whole transcript of a session (issue 35 §1, decision 0084): read a page at a time, downloaded as NDJSON, or
 * followed live from a `seq`. The session is found in the caller's org first (another org's, or an unknown id, is 404),
 * then Cedar `read` on it, as for its detail.
 */

const onSession: RouteAuthorization<Deps, any, FoundSession> = {
  async find(req, deps, p) {
    const id = req.params.id ?? '';
    const found = publicIdPattern.test(id) ? await findSession(deps.db, p.orgId, id) : undefined;
    if (!found) throw new TroupeError('NOT_FOUND', 'session not found');
    return found;
  },
  action: 'read',
  resource: (_req, p, s) => ({ type: 'Session', id: s.publicId, orgId: p.orgId, projectId: s.projectId }),
};

function seqParam(name: string, raw: string | null): number {
  if (raw === null) return 0;
  const n = Number(raw);
  if (!/^(0|[1-9][0-9]{0,14})$/.test(raw) || !Number.isSafeInteger(n)) {
    throw new TroupeError('HTTP_BAD_QUERY', `${name} must be a seq: a whole number from 0`, { field: name });
  }
  return n;
}

function limitParam(raw: string | null): number {
  if (raw === null) return TRANSCRIPT_PAGE_DEFAULT;
  const n = Number(raw);
  if (!/^[0-9]{1,7}$/.test(raw) || n < 1 || n > TRANSCRIPT_PAGE_MAX) {
    throw new TroupeError('HTTP_BAD_QUERY', `limit must be 1-${TRANSCRIPT_PAGE_MAX}`, { field: 'limit' });
  }
  return n;
}

/** The entries as NDJSON, a page at a time: the node holds one page of a download, never the transcript. */
async function* ndjson(deps: Deps, orgId: string, key: string, after: number): AsyncGenerator<string> {
  for await (const page of transcriptPages(deps.db, orgId, key, after)) {
    let chunk = '';
    for (const entry of page) chunk += `${JSON.stringify(entry)}\n`;
    yield chunk;
  }
}

/** Bytes a follower may leave unsent while catching up before it waits for the client (the SSE cut-off is 256 KiB). */
const CATCH_UP_UNSENT_BYTES = 64 * 1024;
const CATCH_UP_RETRY_MS = 50;
const FOLLOW_PAGE = 500;

/**
 * Sends the stored entries after `after`, then each new one as it is stored, as `transcript.entry` events whose id
 * is the entry's seq. Every entry sent is read from storage after the last one sent, so the stream and the stored
 * transcript agree by construction: no entry twice, none skipped, in seq order. Nudges (transcript writes anywhere in
 * the cluster, status changes) and a poll every FOLLOW_POLL_MS say when to read again.
 */
function follow(stream: SseStream, deps: Deps, orgId: string, session: FoundSession, after: number): void {
  const followers = transcriptFollowers(deps);
  let last = after;
  let busy = false;
  let again = false;
  let retry: NodeJS.Timeout | undefined;
  const pump = async (): Promise<void> => {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      do {
        again = false;
        for (;;) {
          if (stream.closed) return;
          // A client far behind (a long transcript) is fed as it reads, instead of being cut off for a backlog.
          if ((stream.unsentBytes ?? 0) > CATCH_UP_UNSENT_BYTES) {
            retry ??= setTimeout(() => { retry = undefined; void pump(); }, CATCH_UP_RETRY_MS);
            return;
          }
          const page = await readTranscript(deps.db, orgId, session.key, last, FOLLOW_PAGE);
          for (const entry of page) {
            if (!stream.send({ id: String(entry.seq), event: 'transcript.entry', data: entry })) return;
            last = entry.seq;
          }
          if (page.length < FOLLOW_PAGE) break;
        }
      } while (again);
    } catch (err) {
      deps.log.warn({ err, sessionId: session.publicId }, 'a transcript follower could not read; it tries again at its next look');
    } finally {
      busy = false;
    }
  };
  const stopFollowing = followers.follow(orgId, session.publicId, () => void pump());
  const poll = setInterval(() => void pump(), FOLLOW_POLL_MS);
  poll.unref();
  stream.onClose(() => {
    stopFollowing();
    clearInterval(poll);
    if (retry !== undefined) clearTimeout(retry);
  });
  void pump();
}

export function transcriptRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get',
      path: '/api/public/sessions/:id/transcript',
      auth: 'org',
      summary: 'The whole transcript of a session, a page at a time: every output line, prompt, tool step and status change, numbered by a gap-free `seq`',
      description: `Entries with \`seq\` greater than \`after\`, at most \`limit\` (1-${TRANSCRIPT_PAGE_MAX}, default ${TRANSCRIPT_PAGE_DEFAULT}), `
        + 'oldest first; `q` keeps those whose text contains it (any case), looking at most 5,000 entries past `after` a page (a page may then be short or empty). `next` is the `after` of the next page, null at the end. '
        + 'With `format=ndjson` the reply is every entry after `after`, one JSON object a line (`application/x-ndjson`), streamed '
        + 'as a download. To follow a live session without missing or repeating an entry, read up to a seq N, then follow '
        + '`GET /api/public/sessions/{id}/transcript/stream?after=N`. Another org\'s session is 404.',
      tags: ['sessions'],
      querySchema: transcriptQuery,
      responseSchema: transcriptPageReply,
      authorize: onSession,
      async handler(req, deps, { found: session }) {
        const p = orgPrincipal(req);
        const after = seqParam('after', req.query.get('after'));
        if (req.query.get('format') === 'ndjson') {
          if (req.query.has('limit') || req.query.has('q')) {
            throw new TroupeError('HTTP_BAD_QUERY', 'format=ndjson downloads every entry after `after`: it takes no limit or q', { field: 'format' });
          }
          return {
            kind: 'chunks', contentType: 'application/x-ndjson; charset=utf-8',
            headers: { 'content-disposition': `attachment; filename="session-${session.publicId}-transcript.ndjson"`, 'cache-control': 'no-store' },
            chunks: ndjson(deps, p.orgId, session.key, after),
          };
        }
        const limit = limitParam(req.query.get('limit'));
        const q = req.query.get('q') ?? undefined;
        const [entries, head] = await Promise.all([
          readTranscript(deps.db, p.orgId, session.key, after, limit, q), transcriptHead(deps.db, p.orgId, session.key),
        ]);
        const lastRead = entries.at(-1)?.seq ?? after;
        // A full page may have more behind it; with a search, only a read after it can tell. A search that did not fill
        // its page read its whole window: the next page starts after the window.
        const searchedThrough = q === undefined || q === '' || entries.length === limit ? lastRead : after + SEARCH_WINDOW;
        const next = (entries.length === limit || searchedThrough > lastRead) && searchedThrough < head.lastSeq ? searchedThrough : null;
        return { body: { entries, next, lastSeq: head.lastSeq, purgedThrough: head.purgedThrough, cut: head.cut } };
      },
    }),
    route({
      method: 'get',
      path: '/api/public/sessions/:id/transcript/stream',
      auth: 'org',
      sse: true,
      summary: 'Follow a session\'s transcript live (SSE): `transcript.entry` events, each the entry with its `seq` as the event id, from `after` (or `Last-Event-ID`) on',
      description: 'Sends the stored entries after `after`, then each new one as it is stored, in seq order, each once: the same '
        + 'entries `GET /api/public/sessions/{id}/transcript` reads. A client reconnecting with `Last-Event-ID` resumes after that '
        + 'seq. The stream stays open after the session ends (a terminal session may be prompted again); a `status` entry with '
        + 'a terminal status (`completed`, `failed`, `stopped`) tells a client it may stop. Another org\'s session is 404.',
      sseEvents: { 'transcript.entry': { schemaName: 'TranscriptEntry', schema: transcriptEntrySchema } },
      tags: ['sessions', 'streams'],
      querySchema: transcriptStreamQuery,
      authorize: onSession,
      async handler(req, deps, { found: session }) {
        const p = orgPrincipal(req);
        const resumed = req.headers['last-event-id'];
        const after = resumed !== undefined && resumed !== ''
          ? seqParam('Last-Event-ID', resumed)
          : seqParam('after', req.query.get('after'));
        // Heard before the first read: a write between the read and the subscription cannot go unnoticed.
        await transcriptFollowers(deps).ready();
        return { kind: 'sse', open: (stream) => follow(stream, deps, p.orgId, session, after) };
      },
    }),
  ];
}
