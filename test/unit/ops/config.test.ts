// Invariant: configuration is read from the environment once, every bad value stops start-up with one line naming
// the variable (and never echoing a secret), and the result cannot be changed afterwards.
import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../../ops/config.js';

describe('config', () => {
  it('uses embedded defaults when the environment is empty', () => {
    const config = loadConfig({});
    expect(config.port).to.equal(8080);
    expect(config.dataDir).to.equal('./data');
    expect(config.databaseUrl).to.equal(undefined);
    expect(config.amqpUrl).to.equal(undefined);
    expect(config.redisUrl).to.equal(undefined);
    expect(config.kAnonymityFloor).to.equal(5);
    expect(config.cachePrefix).to.equal('troupe:');
  });

  it('reads real engine URLs and typed values', () => {
    const config = loadConfig({
      PORT: '9000', DATABASE_URL: 'postgres://u@h/db', AMQP_URL: 'amqp://g:g@h', REDIS_URL: 'redis://h:6379',
      TROUPE_OUTBOUND_ALLOW: '127.0.0.1, 10.0.0.0/8', TROUPE_BEHIND_TLS: 'true', TROUPE_CACHE_PREFIX: 'acme-prod:',
    });
    expect(config.cachePrefix).to.equal('acme-prod:');
    expect(config.port).to.equal(9000);
    expect(config.databaseUrl).to.equal('postgres://u@h/db');
    expect(config.outboundAllow).to.deep.equal(['127.0.0.1', '10.0.0.0/8']);
    expect(config.behindTls).to.equal(true);
  });

  const bad: Array<[string, string]> = [
    ['PORT', 'eighty'], ['PORT', '70000'], ['DATABASE_URL', 'mysql://x'], ['AMQP_URL', 'http://x'],
    ['REDIS_URL', 'localhost'], ['TROUPE_LOG_LEVEL', 'loud'], ['TROUPE_SHARD_COUNT', '0'],
    ['TROUPE_MASTER_KEY', 'short'], ['TROUPE_BEHIND_TLS', 'maybe'], ['TROUPE_NODE_ID', 'a b'],
    ['TROUPE_CACHE_PREFIX', 'no-colon'], ['TROUPE_CACHE_PREFIX', 'a b:'],
    ['TROUPE_STREAMS_PER_ORG', '0'], ['TROUPE_RATE_LIMIT_WORKER_HEARTBEATS_PER_MINUTE', '10'],
    ['TROUPE_RATE_LIMIT_WORKER_REPORTS_PER_MINUTE', 'many'],
    ['TROUPE_SSO_DNS_SERVERS', 'dns.example.com'], ['TROUPE_SSO_DNS_SERVERS', '256.1.1.1'], ['TROUPE_SSO_DNS_SERVERS', '127.0.0.1:99999'],
    ['TROUPE_SSO_DNS_SERVERS', '::1:53'], ['TROUPE_SSO_DNS_SERVERS', ','], ['TROUPE_RATE_LIMIT_SSO_STARTS_PER_SOURCE_PER_MINUTE', '0'],
  ];
  for (const [variable, value] of bad) {
    it(`stops on ${variable}=${value} with a message naming ${variable}`, () => {
      let thrown: unknown;
      try { loadConfig({ [variable]: value }); } catch (err) { thrown = err; }
      expect(thrown).to.be.instanceOf(ConfigError);
      const message = (thrown as Error).message;
      expect(message).to.contain(variable);
      expect(message).to.not.contain('\n');
    });
  }

  it('reads the DNS servers single sign-on domain verification asks, with ports and bracketed IPv6', () => {
    expect(loadConfig({}).ssoDnsServers).to.equal(undefined);
    expect(loadConfig({ TROUPE_SSO_DNS_SERVERS: '127.0.0.1:5353, 9.9.9.9, [::1]:53, [2001:db8::1]' }).ssoDnsServers)
      .to.deep.equal(['127.0.0.1:5353', '9.9.9.9', '[::1]:53', '[2001:db8::1]']);
  });

  it('never echoes a secret in the message', () => {
    expect(() => loadConfig({ TROUPE_MASTER_KEY: 'not-base64-secret-value' })).to.throw(ConfigError).with.property('message').that.does.not.contain('not-base64-secret-value');
  });

  it('is frozen', () => {
    const config = loadConfig({ TROUPE_OUTBOUND_ALLOW: 'a' });
    expect(Object.isFrozen(config)).to.equal(true);
    expect(Object.isFrozen(config.outboundAllow)).to.equal(true);
  });
});
