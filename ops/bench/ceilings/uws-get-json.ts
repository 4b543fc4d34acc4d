// Ceiling: the least a uWS GET that answers JSON can cost on this machine. Prints `listening <port>`.
import { loadUws } from '../../../http/uws.js';

const uws = loadUws();
const body = JSON.stringify({ user: { id: 'u', email: 'e@x.test' }, org: { id: 'o' }, projects: [], scopes: [] });
uws.App()
  .get('/api/cli/whoami', (res) => {
    res.cork(() => res.writeHeader('content-type', 'application/json').end(body));
  })
  .listen('127.0.0.1', Number(process.env.PORT ?? 0), (socket) => {
    if (!socket) throw new Error('ceiling server could not listen');
    process.stdout.write(`listening ${uws.us_socket_local_port(socket)}\n`);
  });
