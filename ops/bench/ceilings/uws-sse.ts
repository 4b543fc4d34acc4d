// Ceiling: the least an SSE broadcast can cost in uWS on this machine. Prints `listening <port>`.
//   GET  /sse?g=<group>          opens a stream in a broadcast group (like an org)
//   POST /blast?seconds=<s>      broadcasts to every group, one event per group per step, as fast as it can for s seconds
//   POST /once?g=<group>         one event to one group (latency probe); data carries the send time
// Each event is formatted once and written to every stream of its group; a stream whose socket refuses a write
// skips events until uWS drains it (the cheapest bounded policy, no per-stream queue).
import { loadUws } from '../../../http/uws.js';

const uws = loadUws();
interface Stream { res: import('../../../http/uws.js').UwsResponse; blocked: boolean }
const groups = new Map<string, Set<Stream>>();
let seq = 0;

function broadcast(group: Set<Stream>, frame: string): void {
  for (const s of group) {
    if (s.blocked) continue;
    s.res.cork(() => { if (!s.res.write(frame)) s.blocked = true; });
  }
}
const frameOf = (g: string) => `id: ${++seq}\nevent: tick\ndata: {"g":"${g}","seq":${seq},"at":${performance.timeOrigin + performance.now()}}\n\n`;

uws.App()
  .get('/sse', (res, req) => {
    const g = new URLSearchParams(req.getQuery() ?? '').get('g') ?? '0';
    const s: Stream = { res, blocked: false };
    let group = groups.get(g);
    if (!group) groups.set(g, group = new Set());
    group.add(s);
    res.onAborted(() => { group.delete(s); });
    res.onWritable(() => { s.blocked = false; return true; });
    res.cork(() => { res.writeStatus('200 OK').writeHeader('content-type', 'text/event-stream').write(':ok\n\n'); });
  })
  .post('/blast', (res, req) => {
    const seconds = Number(new URLSearchParams(req.getQuery() ?? '').get('seconds') ?? '1');
    let aborted = false;
    res.onAborted(() => { aborted = true; });
    const until = performance.now() + seconds * 1000;
    let events = 0;
    const step = () => {
      if (performance.now() >= until) {
        if (!aborted) res.cork(() => res.end(JSON.stringify({ events })));
        return;
      }
      for (const [g, group] of groups) { broadcast(group, frameOf(g)); events++; }
      setImmediate(step);
    };
    step();
  })
  .post('/once', (res, req) => {
    const g = new URLSearchParams(req.getQuery() ?? '').get('g') ?? '0';
    const group = groups.get(g);
    if (group) broadcast(group, frameOf(g));
    res.cork(() => res.end(String(group?.size ?? 0)));
  })
  .listen('127.0.0.1', Number(process.env.PORT ?? 0), (socket) => {
    if (!socket) throw new Error('ceiling server could not listen');
    process.stdout.write(`listening ${uws.us_socket_local_port(socket)}\n`);
  });
