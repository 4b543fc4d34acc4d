// Invariant: the console turns a provider-supplied URL into an href only when it is an absolute http(s) URL; any
// other scheme (`javascript:`, `data:`, `vbscript:`, relative or malformed) gives null, so the page shows plain text
// (issue 30, finding 8: incident `javascript:` links were rendered as links).
import { expect } from 'chai';
import { webLink } from '../../../http/console/app/web-link.js';

describe('console: external links', () => {
  it('keeps http and https URLs', () => {
    expect(webLink('https://app.incident.io/acme/incidents/42')).to.equal('https://app.incident.io/acme/incidents/42');
    expect(webLink('http://status.example/x?y=1')).to.equal('http://status.example/x?y=1');
    expect(webLink('HTTPS://Example.com/a')).to.equal('https://example.com/a');
  });

  for (const url of [
    'javascript:alert(1)', 'JaVaScRiPt:alert(1)', ' javascript:alert(1)', '\tjava\nscript:alert(1)', 'data:text/html,<script>alert(1)</script>',
    'vbscript:msgbox(1)', 'file:///etc/passwd', '//evil.example/x', '/incidents', 'not a url', '', null, undefined,
    `https://example.com/${'a'.repeat(2000)}`,
  ]) {
    it(`renders ${JSON.stringify(url)?.slice(0, 60)} as no link`, () => expect(webLink(url)).to.equal(null));
  }
});
