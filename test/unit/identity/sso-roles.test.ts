// Invariant: the role single sign-on gives is the highest mapped group's, else the org's default (or a refusal); an
// owner is never demoted by a missing claim, nor while the only owner.
import { expect } from 'chai';
import { groupsOf, mappedRole, roleAtSignIn } from '../../../actors/services/sso/roles.js';

describe('single sign-on roles', () => {
  const map = { devs: 'member', leads: 'admin', founders: 'owner', watchers: 'viewer' } as const;

  it('reads groups as a list or a lone string, and nothing else', () => {
    expect(groupsOf({ groups: ['a', 1, 'b'] }, 'groups')).to.deep.equal(['a', 'b']);
    expect(groupsOf({ roles: 'a' }, 'roles')).to.deep.equal(['a']);
    expect(groupsOf({ groups: { a: 1 } }, 'groups')).to.equal(undefined);
    expect(groupsOf({}, 'groups')).to.equal(undefined);
  });

  it('takes the highest mapped role, ignoring unmapped groups and inherited names', () => {
    expect(mappedRole(['watchers', 'leads', 'devs'], map)).to.equal('admin');
    expect(mappedRole(['toString', '__proto__', 'cooks'], map)).to.equal(undefined);
    expect(mappedRole(undefined, map)).to.equal(undefined);
  });

  it('falls back to the default role, or refuses without one', () => {
    expect(roleAtSignIn({ mapped: undefined, defaultRole: 'viewer', current: 'admin', otherOwners: 1 })).to.deep.equal({ role: 'viewer' });
    expect(roleAtSignIn({ mapped: 'admin', defaultRole: null, current: undefined, otherOwners: 1 })).to.deep.equal({ role: 'admin' });
    expect(roleAtSignIn({ mapped: undefined, defaultRole: null, current: 'member', otherOwners: 1 })).to.have.property('refused');
  });

  it('keeps an owner without a mapped group, and the only owner whatever the groups say', () => {
    expect(roleAtSignIn({ mapped: undefined, defaultRole: 'member', current: 'owner', otherOwners: 3 })).to.deep.equal({ role: 'owner' });
    expect(roleAtSignIn({ mapped: 'viewer', defaultRole: 'member', current: 'owner', otherOwners: 0 })).to.deep.equal({ role: 'owner' });
    expect(roleAtSignIn({ mapped: 'viewer', defaultRole: 'member', current: 'owner', otherOwners: 1 })).to.deep.equal({ role: 'viewer' });
    expect(roleAtSignIn({ mapped: 'owner', defaultRole: 'member', current: 'member', otherOwners: 1 })).to.deep.equal({ role: 'owner' });
  });
});
