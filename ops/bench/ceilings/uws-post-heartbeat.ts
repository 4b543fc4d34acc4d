// Ceilings for the heartbeat (PERFORMANCE.md): a uWS POST that reads and parses a ~200-byte JSON body, then per
// CEILING_MODE: `parse` (nothing more), `cached` (the bearer token checked against a map of verified tokens, jose
// only on a miss), `jose` (EdDSA verify with jose on every request). Prints `listening <port>`.
import { jwtVerify } from 'jose';
import { loadUws } from '../../../http/uws.js';
import { Secrets } from '../../kernel/secrets.js';
import { deriveSigningKeys } from '../../../actors/services/identity/tokens.js';

const mode = process.env.CEILING_MODE ?? 'parse';
const keys = deriveSigningKeys(Secrets.fromBase64(process.env.TROUPE_MASTER_KEY ?? ''));
const verified = new Map<string, number>();
const uws = loadUws();
const reply = JSON.stringify({ ok: true, mutations: [] });

async function check(token: string): Promise<boolean> {
  if (mode === 'parse') return true;
  if (mode === 'cached') {
    const exp = verified.get(token);
    if (exp !== undefined && exp > Date.now()) return true;
  }
  try {
    const { payload } = await jwtVerify(token, keys.publicKey, { algorithms: ['EdDSA'] });
    if (mode === 'cached') verified.set(token, (payload.exp ?? 0) * 1000);
    return true;
  } catch {
    return false;
  }
}

uws.App()
  .post('/api/daemon/heartbeat', (res, req) => {
    const auth = req.getHeader('authorization');
    let aborted = false;
    res.onAborted(() => { aborted = true; });
    let body = Buffer.alloc(0);
    res.onData((chunk, last) => {
      body = Buffer.concat([body, Buffer.from(chunk)]);
      if (!last) return;
      const parsed = JSON.parse(body.toString('utf8')) as { workerId?: unknown };
      const done = (ok: boolean) => {
        if (aborted) return;
        res.cork(() => {
          if (ok && typeof parsed.workerId === 'string') res.writeHeader('content-type', 'application/json').end(reply);
          else res.writeStatus('401 Unauthorized').end('{}');
        });
      };
      const token = auth.slice(7);
      if (mode === 'parse') done(true);
      else void check(token).then(done);
    });
  })
  .listen('127.0.0.1', Number(process.env.PORT ?? 0), (socket) => {
    if (!socket) throw new Error('ceiling server could not listen');
    process.stdout.write(`listening ${uws.us_socket_local_port(socket)}\n`);
  });
