// Invariant: the outbound guard's address classification calls an address public only when it is neither private,
// loopback, link-local, unspecified, multicast, shared, documentation nor reserved — in IPv4, IPv6 and every IPv6
// form that embeds an IPv4 address — and the allow list opens exactly the hosts and CIDRs it names.
import { expect } from 'chai';
import { classifyAddress, OutboundAllowList, OutboundGuard, OutboundRefused, parseAddress } from '../../../actors/services/integrations/outbound/index.js';

describe('outbound address classification', () => {
  const cases: [string, string][] = [
    ['127.0.0.1', 'loopback'], ['127.255.255.254', 'loopback'], ['10.0.0.1', 'private'], ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['172.15.255.255', 'public'], ['172.32.0.0', 'public'],
    ['192.168.1.1', 'private'], ['169.254.169.254', 'link-local'], ['100.64.0.1', 'shared'], ['100.128.0.1', 'public'],
    ['0.0.0.0', 'unspecified'], ['0.1.2.3', 'unspecified'], ['224.0.0.1', 'multicast'], ['239.255.255.255', 'multicast'],
    ['240.0.0.1', 'reserved'], ['255.255.255.255', 'reserved'], ['192.0.2.5', 'documentation'], ['198.18.0.1', 'reserved'],
    ['8.8.8.8', 'public'], ['1.1.1.1', 'public'], ['93.184.216.34', 'public'],
    ['::1', 'loopback'], ['::', 'unspecified'], ['fe80::1', 'link-local'], ['febf::1', 'link-local'], ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'private'], ['fd12:3456::1', 'private'], ['ff02::1', 'multicast'], ['2001:db8::1', 'documentation'],
    ['2606:4700:4700::1111', 'public'], ['2a00:1450:4001::200e', 'public'],
    // IPv4 inside IPv6 is judged by the IPv4 address.
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['::ffff:10.1.2.3', 'private'], ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:8.8.8.8', 'public'], ['::127.0.0.1', 'loopback'], ['::10.0.0.1', 'private'], ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a00:1', 'private'], ['64:ff9b::808:808', 'public'], ['2002:7f00:1::1', 'loopback'], ['2002:c0a8:101::', 'private'],
    ['0:0:0:0:0:ffff:192.168.0.1', 'private'], ['[::1]', 'loopback'],
  ];
  for (const [address, klass] of cases) {
    it(`${address} is ${klass}`, () => expect(classifyAddress(address)).to.equal(klass));
  }

  it('is undefined for text that is not an address', () => {
    for (const text of ['localhost', '1.2.3', '1.2.3.4.5', '256.0.0.1', '::g', '', '01.2.3.4x']) expect(classifyAddress(text), text).to.equal(undefined);
  });

  it('expands IPv6 forms to the same bytes', () => {
    const a = parseAddress('::ffff:127.0.0.1')!.bytes;
    const b = parseAddress('0:0:0:0:0:ffff:7f00:0001')!.bytes;
    expect(Buffer.from(a).equals(Buffer.from(b))).to.equal(true);
  });
});

describe('outbound allow list', () => {
  it('matches hosts exactly and case-insensitively', () => {
    const allow = new OutboundAllowList(['Agents.Internal.Test', '10.0.0.0/8']);
    expect(allow.allowsHost('agents.internal.test')).to.equal(true);
    expect(allow.allowsHost('agents.internal.test.')).to.equal(true);
    expect(allow.allowsHost('evil.agents.internal.test')).to.equal(false);
  });

  it('matches CIDRs, single addresses and the IPv4-mapped form of an IPv4 CIDR', () => {
    const allow = new OutboundAllowList(['127.0.0.1', '10.1.0.0/16', 'fd00::/8']);
    expect(allow.allowsAddress('127.0.0.1')).to.equal(true);
    expect(allow.allowsAddress('127.0.0.2')).to.equal(false);
    expect(allow.allowsAddress('::ffff:127.0.0.1')).to.equal(true);
    expect(allow.allowsAddress('10.1.200.3')).to.equal(true);
    expect(allow.allowsAddress('10.2.0.1')).to.equal(false);
    expect(allow.allowsAddress('fd12::1')).to.equal(true);
    expect(allow.allowsAddress('fc00::1')).to.equal(false);
  });

  it('ignores malformed CIDR entries rather than opening everything', () => {
    const allow = new OutboundAllowList(['10.0.0.0/99', '::/-1', '']);
    expect(allow.allowsAddress('10.0.0.1')).to.equal(false);
    expect(allow.allowsAddress('::1')).to.equal(false);
  });
});

describe('outbound guard vetting (no connection is made)', () => {
  const resolverFor = (answers: Record<string, string[]>) => async (host: string) => {
    const list = answers[host];
    if (!list) throw new Error('ENOTFOUND');
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

  async function refusal(guard: OutboundGuard, url: string): Promise<OutboundRefused> {
    try {
      await guard.vet(url);
    } catch (err) {
      expect(err).to.be.instanceOf(OutboundRefused);
      return err as OutboundRefused;
    }
    throw new Error(`${url} was not refused`);
  }

  it('refuses schemes other than http and https, and URLs with credentials', async () => {
    const guard = new OutboundGuard([], resolverFor({}));
    for (const url of ['ftp://example.test/', 'file:///etc/passwd', 'gopher://x/', 'javascript:alert(1)', 'not a url']) {
      expect((await refusal(guard, url)).reason, url).to.equal('scheme');
    }
    expect((await refusal(guard, 'https://user:pw@public.test/')).reason).to.equal('credentials');
  });

  it('refuses a name when any of its addresses is internal', async () => {
    const guard = new OutboundGuard([], resolverFor({ 'mixed.test': ['93.184.216.34', '10.0.0.5'], 'pub.test': ['93.184.216.34'] }));
    const r = await refusal(guard, 'https://mixed.test/');
    expect(r.reason).to.equal('address');
    expect(r.addressClass).to.equal('private');
    expect((await guard.vet('https://pub.test/x')).address).to.equal('93.184.216.34');
  });

  it('refuses literal internal addresses in every spelling', async () => {
    const guard = new OutboundGuard([], resolverFor({}));
    for (const url of ['http://127.0.0.1/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://169.254.169.254/latest', 'http://0.0.0.0/',
      'http://2130706433/', 'http://0x7f000001/', 'http://[fe80::1]/', 'http://[64:ff9b::7f00:1]/']) {
      expect((await refusal(guard, url)).reason, url).to.equal('address');
    }
  });

  it('unresolvable names are refused as dns', async () => {
    const guard = new OutboundGuard([], resolverFor({}));
    expect((await refusal(guard, 'https://nowhere.test/')).reason).to.equal('dns');
  });

  it('lets an allowed host or CIDR through and pins the checked address', async () => {
    const guard = new OutboundGuard(['agent.internal.test', '127.0.0.0/8'], resolverFor({ 'agent.internal.test': ['10.9.9.9'] }));
    expect((await guard.vet('http://agent.internal.test:8080/')).address).to.equal('10.9.9.9');
    expect((await guard.vet('http://127.0.0.1:9/')).address).to.equal('127.0.0.1');
    expect((await refusal(guard, 'http://[::1]/')).reason).to.equal('address');
  });
});
