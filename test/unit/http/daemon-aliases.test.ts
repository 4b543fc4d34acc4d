// Invariant: the deprecated /v1/daemon/heartbeat and /v1/daemon/poll are the /api routes registered a second time —
// the same handler function, admission class and header list — so a worker still on the old paths takes no slower
// path (no redirect, no wrapper) than one on the new.
import { expect } from 'chai';
import { allRoutes } from '../../../http/routes.js';

describe('daemon routes: the deprecated /v1 aliases', () => {
  const routes = allRoutes();
  const find = (path: string) => {
    const found = routes.filter((r) => r.method === 'post' && r.path === path);
    expect(found, path).to.have.length(1);
    return found[0]!;
  };

  for (const name of ['heartbeat', 'poll']) {
    it(`serves /v1/daemon/${name} with the very handler of /api/daemon/${name}, marked deprecated`, () => {
      const current = find(`/api/daemon/${name}`);
      const legacy = find(`/v1/daemon/${name}`);
      expect(legacy.handler).to.equal(current.handler);
      expect([legacy.auth, legacy.admission, legacy.readsHeaders, legacy.bodySchema])
        .to.deep.equal([current.auth, current.admission, current.readsHeaders, current.bodySchema]);
      expect([current.deprecated, legacy.deprecated]).to.deep.equal([undefined, true]);
    });
  }
});
