import type { Deps } from '../deps.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import type { Logger } from '../../../ops/kernel/logger.js';
import { findCredential, recordRotation, rotationsAfter, type RecordedRotation, type RotationCursor } from '../../../storage/credentials/credentials.js';
import { rotationSealContext, streamTopics, type NodeStreams, type SealedRotation } from '../fleet/node-streams.js';
import type { NodeService } from '../node-service.js';
import { defaultCredentialProviders, type CredentialProviderRegistry } from './providers.js';
import { credentialKind } from '../../../schemas/daemon-extras/bodies.js';
import { createRotatePresence, type RotatePresence } from './rotation-presence.js';

/**
 * Credential rotation fan-out (spec 4.2, decision 0012). A rotation re-resolves the (org, kind) credential through
 * the provider registry and publishes it, sealed, on the org's rotation topic; every node opens it and hands it to
 * its own rotate-stream subscribers of that org. `sessionCount` is the org's live subscribers across the cluster,
 * read from the presence rows each node keeps current for the orgs it serves.
 */

export interface RotationResult {
  readonly ok: true;
  readonly kind: string;
  readonly sessionCount: number;
  readonly rotatedAt: string;
}

/** A rotation as a rotate-stream subscriber receives it; shared by all subscribers of the org on this node, so read-only. */
export type OpenedRotation = Readonly<{ kind: string; value: string; rotatedAt: string }>;

/** A rotation's event id on the rotate stream, `<rotatedAt>.<kind>`: ids in the order the rotations happened. */
export const rotationEventId = (r: { readonly rotatedAt: string; readonly kind: string }): string => `${r.rotatedAt}.${r.kind}`;

const credentialKindPattern = new RegExp(credentialKind.pattern);
/** `toISOString`'s length: a rotation id's time, then `.`, then the kind. */
const ISO_LENGTH = 24;

/**
 * Where a rotate stream resumes (decision 0064): after the rotation a `Last-Event-ID` names, or from the start for
 * `0` (a worker with nothing yet: every kind's last rotation). undefined for anything else.
 */
export function rotationCursor(lastEventId: string): RotationCursor | undefined {
  if (lastEventId === '0') return 'start';
  const rotatedAt = lastEventId.slice(0, ISO_LENGTH);
  const kind = lastEventId.slice(ISO_LENGTH + 1);
  if (lastEventId[ISO_LENGTH] !== '.' || !credentialKindPattern.test(kind)) return undefined;
  const at = Date.parse(rotatedAt);
  // Only a time as this node writes it: no 30 February, no rolled-over hour, no other format of the same instant.
  if (!Number.isFinite(at) || new Date(at).toISOString() !== rotatedAt) return undefined;
  return { at, kind };
}

export interface CredentialServices {
  readonly providers: CredentialProviderRegistry;
  /**
   * Attaches a local subscriber to the org's rotations; resolves once its presence is recorded and, when it resumes
   * (`resume`), once the rotations it missed have been handed to `listener`, oldest first, before any live one.
   */
  subscribe(orgId: string, listener: (r: OpenedRotation) => void, resume?: RotationCursor): Promise<() => void>;
  rotate(orgId: string, kind: string): Promise<RotationResult>;
}

/** The node's credential services (`deps.services.credentials`). */
export const credentialServices = (deps: Pick<Deps, 'services'>): CredentialServices => deps.services.credentials;

type CredentialDeps = Pick<Deps, 'config' | 'log' | 'clock' | 'db' | 'secrets' | 'transport'>;

/** Builds the node's credential services; the presence refresher runs from `start` to `stop`. */
export function createCredentialServices(deps: CredentialDeps, streams: NodeStreams): CredentialServices & NodeService {
  const log = deps.log.child({ component: 'credential-rotation' });
  const providers = defaultCredentialProviders();
  const presence = createRotatePresence(deps, deps.config.nodeId, log);
  const opener = rotationOpener(deps, log);

  /** A live subscriber of the org's rotations on this node, counted in its presence; resolves to its leave. */
  const attach = async (orgId: string, listener: (r: OpenedRotation) => void): Promise<() => void> => {
    const { unsubscribe } = streams.credentials.subscribe(orgId, ({ data }) => {
      const opened = opener.openOnce(data);
      if (opened) listener(opened);
    });
    await presence.join(orgId);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      unsubscribe();
      presence.leave(orgId);
    };
  };

  return {
    name: 'credential-rotation',
    providers,
    start: () => presence.start(),
    stop: () => presence.stop(),
    async subscribe(orgId, listener, resume) {
      await streams.ready();
      if (resume === undefined) return attach(orgId, listener);
      return attachResuming(orgId, listener, resume, { attach, deps, opener });
    },
    rotate: (orgId, kind) => rotate(orgId, kind, { deps, providers, presence }),
  };
}

/**
 * Opens sealed rotations with this node's master key. A published rotation is opened once per node, not once per
 * subscriber: the fan-out hands the same event object to every subscriber of the org, and they all get the same
 * opened object (so its SSE frame is formatted once too). One that does not open is logged and not forwarded.
 */
function rotationOpener(deps: Pick<CredentialDeps, 'secrets'>, log: Logger) {
  const opened = new WeakMap<SealedRotation, OpenedRotation | null>();
  return {
    openOnce(data: SealedRotation): OpenedRotation | null {
      let r = opened.get(data);
      if (r !== undefined) return r;
      try {
        r = { kind: data.kind, value: deps.secrets.open(data.sealedValue, rotationSealContext(data.orgId, data.kind, data.rotatedAt)), rotatedAt: data.rotatedAt };
      } catch (err) {
        log.warn({ err, orgId: data.orgId, kind: data.kind }, 'a rotation did not open with this node\'s master key; not forwarded');
        r = null;
      }
      opened.set(data, r);
      return r;
    },
    openRecorded(orgId: string, r: RecordedRotation): OpenedRotation | null {
      try {
        return { kind: r.kind, value: deps.secrets.open(r.sealedValue, rotationSealContext(orgId, r.kind, r.rotatedAt)), rotatedAt: r.rotatedAt };
      } catch (err) {
        log.warn({ err, orgId, kind: r.kind }, 'a recorded rotation did not open with this node\'s master key; not replayed');
        return null;
      }
    },
  };
}

/**
 * A subscriber resuming after `resume` (decision 0064): the rotations it missed, oldest first, then the live ones.
 * While the missed rotations are read, live ones wait: none falls between the two.
 */
async function attachResuming(
  orgId: string, listener: (r: OpenedRotation) => void, resume: RotationCursor,
  { attach, deps, opener }: {
    attach: (orgId: string, listener: (r: OpenedRotation) => void) => Promise<() => void>;
    deps: Pick<CredentialDeps, 'db'>;
    opener: ReturnType<typeof rotationOpener>;
  },
): Promise<() => void> {
  let waiting: OpenedRotation[] | undefined = [];
  const leave = await attach(orgId, (r) => {
    if (waiting === undefined) listener(r);
    else waiting.push(r);
  });
  let missed;
  try {
    missed = await rotationsAfter(deps.db, orgId, resume);
  } catch (err) {
    leave();
    throw err;
  }
  // Per kind, the rotation the replay sent. A held live rotation not newer than it is that rotation again, or
  // an older one whose publish came late; sending it would leave the subscriber on an older value.
  const replayed = new Map<string, string>();
  for (const r of missed) {
    const opened = opener.openRecorded(orgId, r);
    if (opened === null) continue;
    replayed.set(opened.kind, opened.rotatedAt);
    listener(opened);
  }
  const live = waiting;
  waiting = undefined;
  for (const r of live) {
    const sent = replayed.get(r.kind);
    // Same-format ISO times order as strings.
    if (sent === undefined || r.rotatedAt > sent) listener(r);
  }
  return leave;
}

/** Re-resolves the org's credential of `kind`, records the rotation sealed, and publishes it to every node. */
async function rotate(
  orgId: string, kind: string, { deps, providers, presence }: { deps: CredentialDeps; providers: CredentialProviderRegistry; presence: RotatePresence },
): Promise<RotationResult> {
  const stored = await findCredential(deps.db, orgId, kind);
  if (!stored) throw new TroupeError('NOT_FOUND', 'no credential of this kind is stored for the org');
  const value = await providers.get(stored.provider).resolve(stored, deps.secrets);
  const now = deps.clock.now();
  const rotatedAt = new Date(now).toISOString();
  const event: SealedRotation = {
    orgId, kind, rotatedAt, sealedValue: deps.secrets.seal(value, rotationSealContext(orgId, kind, rotatedAt)),
  };
  // Recorded before it is published: a stream resuming meanwhile finds it in one or the other, never neither.
  if (!(await recordRotation(deps.db, orgId, kind, now, event.sealedValue))) {
    throw new TroupeError('NOT_FOUND', 'no credential of this kind is stored for the org');
  }
  await deps.transport.publish(streamTopics.credentialRotated(orgId), event);
  const sessionCount = await presence.countAt(orgId, now);
  return { ok: true, kind, sessionCount, rotatedAt };
}
