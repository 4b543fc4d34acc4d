import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign as signEd25519, type KeyObject } from 'node:crypto';
import type { NodeProcess } from '../cluster/processes.js';
import { canonicalEnvelope } from '../../actors/services/integrations/requesters/signed-dispatch.js';
import { secretKey, sign as signWebhook } from '../../actors/services/governance/standard-webhooks.js';
import type { Tenant } from './scenario.js';

/**
 * Signed deliveries for the Redis-hang goal (issue 20): incident.io webhooks (spec 5.6, 7, 8: a replayed webhook id is
 * refused, the replay store is the database, so it fails closed) and signed agent dispatches (spec 5.5: signature and
 * ±300 s timestamp always enforced; nonce replay rejection is best effort, skipped while the cache is unavailable).
 * `setUp` connects a signing secret and registers a keyed requester through the org owner's HTTP routes.
 */
export interface SignedFixtures {
  readonly webhookSecret: string;
  readonly requesterId: string;
  readonly requesterKey: KeyObject;
  /** An API key bound to the keyed requester: its dispatches must be signed. */
  readonly boundApiKey: string;
}

async function call(url: string, method: string, path: string, token: string | undefined, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}${path}`, {
    method, signal: AbortSignal.timeout(15_000),
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => undefined) };
}

export async function setUpSignedFixtures(node: NodeProcess, tenant: Tenant): Promise<SignedFixtures> {
  const webhookSecret = `whsec_${randomBytes(24).toString('base64')}`;
  const put = await call(node.url, 'PUT', `/api/org/${tenant.orgId}/integrations/incident-io`, tenant.ownerToken, { signingSecret: webhookSecret });
  if (put.status !== 200) throw new Error(`connecting incident.io answered ${put.status}: ${JSON.stringify(put.json)}`);
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const publicB64 = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
  const requester = await call(node.url, 'POST', `/api/org/${tenant.orgId}/requesters`, tenant.ownerToken, { name: 'faults-signer', mode: 'strict', publicKey: publicB64 });
  if (requester.status !== 201) throw new Error(`registering a requester answered ${requester.status}: ${JSON.stringify(requester.json)}`);
  const requesterId = requester.json.requester.id as string;
  const key = await call(node.url, 'POST', `/api/org/${tenant.orgId}/keys`, tenant.ownerToken, { name: 'faults-bound', requesterId });
  if (key.status !== 201) throw new Error(`creating a bound key answered ${key.status}: ${JSON.stringify(key.json)}`);
  return { webhookSecret, requesterId, requesterKey: privateKey, boundApiKey: key.json.fullKey as string };
}

const WEBHOOK_PATH = '/api/webhooks/ingest/incident-io';

function webhookHeaders(secret: string, body: string, opts: { id?: string; timestamp?: number; wrongSecret?: boolean } = {}) {
  const id = opts.id ?? `msg_${randomUUID()}`;
  const timestamp = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  const key = secretKey(opts.wrongSecret ? `whsec_${randomBytes(24).toString('base64')}` : secret)!;
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signWebhook(key, id, timestamp, body) };
}

function dispatchHeaders(f: SignedFixtures, body: string, opts: { nonce?: string; timestamp?: number; forge?: boolean } = {}) {
  const timestamp = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  const nonce = opts.nonce ?? randomUUID().replace(/-/g, '');
  const envelope = canonicalEnvelope({
    bodySha256: createHash('sha256').update(body).digest('hex'), method: 'POST', nonce, path: '/api/agent-dispatch', requesterId: f.requesterId, timestamp,
  });
  const signer = opts.forge ? generateKeyPairSync('ed25519').privateKey : f.requesterKey;
  return {
    'x-troupe-request-timestamp': timestamp, 'x-troupe-request-nonce': nonce,
    'x-troupe-request-signature': signEd25519(null, Buffer.from(envelope), signer).toString('base64'),
  };
}

/** What each probe was answered; "accepted" means 2xx. */
export interface SignedVerdicts {
  readonly webhook: { valid: number; badSignature: number; staleTimestamp: number; replayedId: number };
  readonly dispatch: { valid: number; badSignature: number; staleTimestamp: number; replayedNonce: number };
  /** A nonce first used before the probes, sent again: refused whenever the cache answers. */
  readonly nonceUsedEarlier: string;
}

/** A fresh signed dispatch, to be replayed later (its nonce recorded while the cache works). */
export async function signedDispatch(node: NodeProcess, tenant: Tenant, f: SignedFixtures, nonce?: string): Promise<{ status: number; nonce: string }> {
  const body = JSON.stringify({ projectId: tenant.projectId, prompt: `signed ${randomUUID()}` });
  const headers = dispatchHeaders(f, body, nonce === undefined ? {} : { nonce });
  const r = await call(node.url, 'POST', '/api/agent-dispatch', f.boundApiKey, body, headers);
  return { status: r.status, nonce: headers['x-troupe-request-nonce'] };
}

export async function replayDispatch(node: NodeProcess, tenant: Tenant, f: SignedFixtures, nonce: string): Promise<number> {
  return (await signedDispatch(node, tenant, f, nonce)).status;
}

/** Sends each kind of webhook delivery and signed dispatch once; returns the status codes. */
export async function probeSignedDeliveries(node: NodeProcess, tenant: Tenant, f: SignedFixtures, nonceUsedEarlier: string): Promise<SignedVerdicts> {
  const event = (id: string) => JSON.stringify({ event_type: 'incident.created', data: { id, name: 'faults', severity: { name: 'minor' }, status: 'triage' } });
  const deliver = (body: string, headers: Record<string, string>) => call(node.url, 'POST', `${WEBHOOK_PATH}?org=${tenant.orgId}`, undefined, body, headers);
  const validBody = event(`inc-${randomUUID()}`);
  const validHeaders = webhookHeaders(f.webhookSecret, validBody);
  const valid = (await deliver(validBody, validHeaders)).status;
  const replayedId = (await deliver(validBody, validHeaders)).status;
  const other = event(`inc-${randomUUID()}`);
  const badSignature = (await deliver(other, webhookHeaders(f.webhookSecret, other, { wrongSecret: true }))).status;
  const staleTimestamp = (await deliver(other, webhookHeaders(f.webhookSecret, other, { timestamp: Math.floor(Date.now() / 1000) - 600 }))).status;

  const body = () => JSON.stringify({ projectId: tenant.projectId, prompt: `signed ${randomUUID()}` });
  const send = (b: string, headers: Record<string, string>) => call(node.url, 'POST', '/api/agent-dispatch', f.boundApiKey, b, headers);
  const b1 = body();
  const dValid = (await send(b1, dispatchHeaders(f, b1))).status;
  const b2 = body();
  const dBad = (await send(b2, dispatchHeaders(f, b2, { forge: true }))).status;
  const b3 = body();
  const dStale = (await send(b3, dispatchHeaders(f, b3, { timestamp: Math.floor(Date.now() / 1000) - 400 }))).status;
  const dReplay = await replayDispatch(node, tenant, f, nonceUsedEarlier);
  return {
    webhook: { valid, badSignature, staleTimestamp, replayedId },
    dispatch: { valid: dValid, badSignature: dBad, staleTimestamp: dStale, replayedNonce: dReplay },
    nonceUsedEarlier,
  };
}
