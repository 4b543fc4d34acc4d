// Run with `node --expose-gc --import tsx`: the client's deadline, a caller's abort and a stream reader's abort each
// end a request to a server that never answers (or never ends its stream), with the collector running all along.
// Prints one JSON line per case: {case, outcome, ms}.
import http from 'node:http';
import { createTroupeClient, eventStream, streamEvents } from '../../../http/client/index.js';

const server = http.createServer((req, res) => {
  if (req.headers.accept?.includes('text/event-stream')) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': open\n\n');
  }
  // Anything else: no answer at all.
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
setInterval(() => (globalThis as { gc?: () => void }).gc?.(), 20);

const within = async (name: string, work: Promise<unknown>) => {
  const t0 = Date.now();
  const outcome = await Promise.race([
    work.then(() => 'ended', (err: Error) => err.name),
    new Promise((resolve) => setTimeout(() => resolve('still waiting'), 3000)),
  ]);
  console.log(JSON.stringify({ case: name, outcome, ms: Date.now() - t0 }));
};

const api = createTroupeClient({ baseUrl, timeoutMs: 400 });
await within('deadline', api.GET('/healthz'));

const caller = new AbortController();
setTimeout(() => caller.abort(), 300);
await within('caller abort', createTroupeClient({ baseUrl, timeoutMs: 60_000 }).GET('/healthz', { signal: caller.signal }));

const reader = new AbortController();
await within('stream abort', (async () => {
  const { response } = await api.GET('/api/sessions/events', { ...eventStream, signal: reader.signal });
  setTimeout(() => reader.abort(), 300);
  for await (const _event of streamEvents(response.body, reader.signal)) { /* none come */ }
})());
process.exit(0);
