// Invariant: an incident keeps only an http(s) link (issue 30, finding 8). A provider delivery whose permalink is
// `javascript:`, `data:` or otherwise not http(s) still records the incident, without the link (an http(s) `url`
// beside a bad permalink is taken instead); the incident actor drops such a link whoever sends it.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { mapIncidentEvent } from '../../../actors/services/governance/incident-io-events.js';
import { runCommand } from '../../support/harness.js';
import { createIncidentBehavior } from '../../../actors/kinds/incident/index.js';
import { incidentUrl } from '../../../schemas/governance/incident.js';

const BAD = ['javascript:alert(document.cookie)', 'JAVASCRIPT:alert(1)', 'data:text/html,<script>alert(1)</script>', 'vbscript:x', 'ftp://x/y', '//evil/x', 'https://a b', 'https://x\n'];
const created = (incident: Record<string, unknown>) => mapIncidentEvent({ event_type: 'incident.created', data: { id: 'inc-1', name: 'DB down', ...incident } });

describe('incidents: only http(s) links are stored', () => {
  it('keeps http and https links', () => {
    expect(created({ permalink: 'https://app.incident.io/acme/incidents/1' })?.fields.url).to.equal('https://app.incident.io/acme/incidents/1');
    expect(created({ url: 'http://status.example/1' })?.fields.url).to.equal('http://status.example/1');
  });

  for (const url of BAD) {
    it(`drops ${JSON.stringify(url)} from a delivery and keeps the incident`, () => {
      const mapped = created({ permalink: url });
      expect(mapped).to.deep.include({ change: 'created', externalId: 'inc-1' });
      expect(mapped!.fields).to.deep.include({ title: 'DB down', url: null });
      expect(created({ permalink: url, url: 'https://ok.example/1' })!.fields.url).to.equal('https://ok.example/1');
      expect(incidentUrl(url)).to.equal(null);
    });
  }

  it('the incident actor stores no non-http(s) link, whoever sent it', () => {
    const behavior = createIncidentBehavior();
    const msg = { type: 'incident.record', orgId: randomUUID(), source: 'incident-io', externalId: 'e1', change: 'created', fields: { title: 't', url: 'javascript:alert(1)' } };
    const result = runCommand(behavior, behavior.initial('i'), msg);
    expect(result.ok).to.equal(true);
    if (result.ok) expect(result.state.incident).to.include({ title: 't', url: null });
  });
});
