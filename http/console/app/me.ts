import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { get } from './api.js';
import { ORG_LIST_PATH, WHOAMI_PATH } from './first-screen.js';
import type { OrgList, OrgRole, WhoAmI } from './api-types.js';

/** Who is signed in: the person, their org and role there, and the org's projects they see. */
export type Me = WhoAmI & { readonly role: OrgRole };

export async function loadMe(): Promise<Me> {
  const [whoami, orgs] = await Promise.all([
    get<WhoAmI>(WHOAMI_PATH),
    get<OrgList>(ORG_LIST_PATH),
  ]);
  const role = orgs.orgs.find((o) => o.id === orgs.activeOrgId)?.role ?? 'viewer';
  return { ...whoami, role };
}

export const MeContext = createContext<Me | undefined>(undefined);

export function useMe(): Me {
  const me = useContext(MeContext);
  if (!me) throw new Error('useMe outside a signed-in page');
  return me;
}

/** How a recorded actor (`user:<id>`, `apiKey:<id>`, `worker:<id>`…) reads to the person looking at it. */
export function actorName(me: Me, actor: string): string {
  // Some records name a user by bare id (policy versions), others as `user:<id>`.
  const bareUser = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(actor);
  const [kind, id = ''] = bareUser ? ['user', actor] : actor.split(':', 2);
  if (kind === 'user') return id === me.user?.id ? 'you' : `a user (${id.slice(0, 8)})`;
  if (kind === 'apiKey') return `API key ${id.slice(0, 8)}`;
  if (kind === 'worker') return `worker ${id.slice(0, 8)}`;
  if (kind === 'machine') return `machine client ${id.slice(0, 8)}`;
  return actor;
}

export function projectName(me: Me, id: string | null | undefined): string {
  if (!id) return '—';
  return me.projects.find((p) => p.id === id)?.name ?? id.slice(0, 8);
}
