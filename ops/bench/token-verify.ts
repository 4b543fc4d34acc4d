// Microbenchmark (PERFORMANCE.md G8): CPU spent authenticating one heartbeat's runtime JWT, amortised over a
// fleet's steady state. N daemons (one registration, as a fleet is usually provisioned) each heartbeat every 15 s
// of simulated time for the life of their token, all through the real authenticator (memo, signature check,
// registration revocation check against a migrated PGlite), and the process CPU time is divided by the number of
// heartbeats. Expiry, signature and revocation are asserted still enforced at the end. Exits 1 above 5 µs.
//   npx tsx ops/bench/token-verify.ts [--daemons 10000] [--minutes 14] [--interval 15]
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createDb } from '../../storage/db.js';
import { migrate } from '../../storage/migrations/runner.js';
import { insertOrg } from '../../storage/identity/orgs.js';
import { markRegistrationTokenRevoked, writeRegistrationToken } from '../../storage/identity/credentials.js';
import { createAuthenticator } from '../../actors/services/identity/authenticator.js';
import { deriveSigningKeys, signToken } from '../../actors/services/identity/tokens.js';
import { tags } from '../../actors/services/identity/revocation.js';
import { generateMasterKey } from '../secrets.js';
import { Secrets } from '../kernel/secrets.js';
import { printTable } from './harness.js';

const { values } = parseArgs({
  options: {
    daemons: { type: 'string', default: '10000' },
    minutes: { type: 'string', default: '14' },
    interval: { type: 'string', default: '15' },
  },
});
const daemons = Number(values.daemons);
const minutes = Number(values.minutes);
const intervalMs = Number(values.interval) * 1000;
const GOAL_US = 5;

let now = Date.UTC(2030, 0, 1);
const clock = { now: () => now };
const keys = deriveSigningKeys(Secrets.fromBase64(generateMasterKey()));
const db = await createDb({ inMemory: true });
await migrate(db);
const org = await insertOrg(db, { id: randomUUID(), name: 'Bench', slug: `bench-${randomUUID().slice(0, 8)}`, plan: 'free' });
const registrationId = randomUUID();
await writeRegistrationToken(db, org.id, { id: registrationId, name: 'fleet', prefix: 'bench', hash: 'x'.repeat(64), projects: [], createdAt: now, revokedAt: null });
const auth = createAuthenticator({ db, keys, clock });

const tokens: string[] = [];
for (let i = 0; i < daemons; i++) {
  const { token } = await signToken(keys, clock, 'runtime', { wid: randomUUID(), org: org.id, prj: [], reg: registrationId, scope: ['daemon'] });
  tokens.push(`Bearer ${token}`);
}

/** One heartbeat round of the whole fleet; returns CPU µs spent. */
async function round(): Promise<number> {
  const start = process.cpuUsage();
  for (const authorization of tokens) {
    const p = await auth.resolve({ authorization });
    if (p?.kind !== 'runtime') throw new Error('a valid runtime token was refused');
  }
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

const rounds = Math.floor((minutes * 60_000) / intervalMs);
const perRound: number[] = [];
for (let r = 0; r < rounds; r++) {
  perRound.push(await round());
  now += intervalMs;
}
const total = perRound.reduce((a, b) => a + b, 0);
const amortised = total / (rounds * daemons);

// Still enforced: an expired token, a forged signature, a revoked registration.
const refused = async (authorization: string) => auth.resolve({ authorization }).then(() => false, () => true);
now += 16 * 60_000;
const expiredRefused = await refused(tokens[0]!);
now -= 16 * 60_000;
const t1 = tokens[1]!;
const at = t1.length - 20; // inside the signature, clear of base64url padding bits
const forged = t1.slice(0, at) + (t1[at] === 'A' ? 'B' : 'A') + t1.slice(at + 1);
const forgedRefused = await refused(forged);
await markRegistrationTokenRevoked(db, org.id, registrationId, now);
auth.invalidate([tags.registration(registrationId)]);
const revokedRefused = await refused(tokens[2]!);

printTable([
  { measure: 'first sight (jose verify + registration check), µs/heartbeat', value: perRound[0]! / daemons },
  { measure: 'steady round (memo hits), median µs/heartbeat', value: [...perRound].sort((a, b) => a - b)[Math.floor(rounds / 2)]! / daemons },
  { measure: `G8 amortised over ${rounds} heartbeats/token, µs/heartbeat`, value: amortised },
]);
console.log(`\n${daemons} daemons, one heartbeat every ${intervalMs / 1000}s for ${minutes} simulated minutes; ` +
  `expired refused: ${expiredRefused}, forged refused: ${forgedRefused}, revoked registration refused: ${revokedRefused}`);
const ok = amortised <= GOAL_US && expiredRefused && forgedRefused && revokedRefused;
console.log(`G8 <= ${GOAL_US} µs with checks enforced: ${ok ? 'yes' : 'NO'}`);
await auth.close();
await db.destroy();
process.exit(ok ? 0 : 1);
