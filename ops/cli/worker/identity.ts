import { ApiError, type WorkerApi } from './api.js';
import { sleep, type Backoff } from './backoff.js';
import type { Lifetime } from './lifetime.js';
import type { WorkerLog } from './log.js';
import type { WorkerOptions } from './options.js';
import { intervalSeconds } from './server-data.js';
import { isWorkerId } from './server-ids.js';
import type { Identity, StateDir } from './state.js';

/** The registration token was refused: the worker cannot run until an operator gives it another. */
export class RegistrationRefused extends Error {}

/** The token and id every call to the server carries, as they are at the time of the call. */
export interface Caller {
  readonly token: string;
  readonly workerId: string;
}

/** The payload of a verified-by-the-server JWT we hold: only read for its expiry and projects. */
function claimsOf(token: string): { exp?: number; prj?: string[] } {
  try {
    return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: number; prj?: string[] };
  } catch {
    return {};
  }
}

const normalUrl = (url: string): string => url.replace(/\/+$/, '');

export interface IdentityDeps {
  readonly opts: Pick<WorkerOptions, 'url' | 'registrationToken' | 'name' | 'capacity' | 'stateDir'>;
  readonly api: WorkerApi;
  readonly state: StateDir;
  readonly log: WorkerLog;
  readonly lifetime: Lifetime;
  readonly newBackoff: () => Backoff;
  /** The token names other projects than before: the offers the worker listens to change with them. */
  readonly projectsChanged: () => void;
}

/**
 * Who the worker is to the server: the identity kept in the state dir while its token is valid, else a new one got
 * with the registration token (retried through outages); and the projects its token lets it take work of.
 */
export class WorkerIdentity implements Caller {
  private identity: Identity | undefined;
  private projectIds = new Set<string>();

  constructor(private readonly deps: IdentityDeps) {}

  /** Undefined until registered (or resumed), and when a drain came first. */
  get current(): Identity | undefined {
    return this.identity;
  }

  get token(): string {
    return this.identity!.runtimeJwt;
  }

  get workerId(): string {
    return this.identity!.workerId;
  }

  get projects(): ReadonlySet<string> {
    return this.projectIds;
  }

  async resumeOrRegister(): Promise<void> {
    const { state, opts, log } = this.deps;
    const saved = state.loadIdentity();
    const exp = saved ? claimsOf(saved.runtimeJwt).exp ?? 0 : 0;
    if (saved && isWorkerId(saved.workerId) && normalUrl(saved.url) === normalUrl(opts.url) && exp * 1000 > Date.now() + 30_000) {
      this.adopt(saved);
      log('info', 'worker.resumed', `resumed as worker ${saved.workerId}`, { workerId: saved.workerId, stateDir: opts.stateDir });
      return;
    }
    await this.register();
  }

  /** Registers until the server answers; returns without an identity when the worker stops first. */
  async register(): Promise<void> {
    const { api, state, opts, log, lifetime } = this.deps;
    const backoff = this.deps.newBackoff();
    for (;;) {
      try {
        const reg = await api.register({ registrationToken: opts.registrationToken, hostname: opts.name, maxAgents: opts.capacity });
        // Only what the worker reads is kept, checked: the id has its format, the token is a string, the intervals are sane.
        if (!isWorkerId(reg.workerId) || typeof reg.runtimeJwt !== 'string') throw new Error('the registration reply has no well-formed worker id and token');
        const identity: Identity = {
          url: normalUrl(opts.url), name: opts.name, workerId: reg.workerId, runtimeJwt: reg.runtimeJwt,
          heartbeatIntervalSeconds: intervalSeconds(reg.heartbeatIntervalSeconds, 15), pollIntervalSeconds: intervalSeconds(reg.pollIntervalSeconds, 5),
        };
        state.saveIdentity(identity);
        this.adopt(identity);
        log('info', 'worker.registered', `registered as worker ${reg.workerId}`, {
          workerId: reg.workerId, capacity: opts.capacity, projects: this.projectIds.size,
        });
        return;
      } catch (err) {
        if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) {
          throw new RegistrationRefused(`the server refused the registration token (${err.status}${err.code ? ` ${err.code}` : ''}): create a new one with POST /api/org/{orgId}/registration-tokens`);
        }
        if (lifetime.stopping) return;
        const wait = backoff.next();
        log('warn', 'server.unreachable', `cannot register yet: ${(err as Error).message}; retrying in ${wait} ms`);
        await sleep(wait, lifetime.endedSignal);
        if (lifetime.stopping) return;
      }
    }
  }

  /** The server handed out a fresh runtime token (with the heartbeat's answer): kept for the next start too. */
  renewToken(runtimeJwt: string): void {
    this.adopt({ ...this.identity!, runtimeJwt });
    this.deps.state.saveIdentity(this.identity!);
  }

  /** The runtime token was refused: a restart must not resume with it. */
  forget(): void {
    this.deps.state.forgetIdentity();
  }

  private adopt(identity: Identity): void {
    const before = [...this.projectIds].sort().join(',');
    this.identity = identity;
    this.projectIds = new Set(claimsOf(identity.runtimeJwt).prj ?? []);
    if ([...this.projectIds].sort().join(',') !== before) this.deps.projectsChanged();
  }
}
