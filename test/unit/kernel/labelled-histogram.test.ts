/** The request-duration histogram must scrape exactly as prom-client's own would for the same observations. */
import { expect } from 'chai';
import { Histogram, Registry } from 'prom-client';
import { LabelledHistogram } from '../../../ops/kernel/labelled-histogram.js';

const buckets = [0.001, 0.01, 0.1, 1];
const observations: Array<[Record<'method' | 'route', string>, number]> = [
  [{ method: 'GET', route: '/a' }, 0.0005],
  [{ method: 'GET', route: '/a' }, 0.001], // on a bound: counted in that bucket (le)
  [{ method: 'GET', route: '/a' }, 0.05],
  [{ method: 'POST', route: '/b "quoted"\n' }, 3], // above every bound: +Inf only; label needs escaping
  [{ method: 'GET', route: '/a' }, 0],
];

function both() {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({ name: 'h_seconds', help: 'help', labelNames: ['method', 'route'], buckets, registers: [theirs] });
  const histogram = new LabelledHistogram({ name: 'h_seconds', help: 'help', labelNames: ['method', 'route'], buckets, registers: [ours] });
  return { theirs, ours, reference, histogram };
}

describe('LabelledHistogram', () => {
  it('exposes the same text as prom-client for the same observations', async () => {
    const { theirs, ours, reference, histogram } = both();
    for (const [labels, value] of observations) {
      reference.labels(labels).observe(value);
      histogram.labels(labels).observe(value);
    }
    const text = await ours.metrics();
    expect(text).to.equal(await theirs.metrics());
    expect(text).to.include('h_seconds_bucket{le="0.001",method="GET",route="/a"} 3');
    expect(text).to.include('h_seconds_count{method="POST",route="/b \\"quoted\\"\\n"} 1');
  });

  it('hands out one series per label set, and reset zeroes it while it stays usable', async () => {
    const { ours, histogram } = both();
    const a = histogram.labels({ method: 'GET', route: '/a' });
    histogram.labels({ route: '/a', method: 'GET' }).observe(0.5);
    a.observe(0.5);
    expect(await ours.metrics()).to.include('h_seconds_count{method="GET",route="/a"} 2');
    ours.resetMetrics();
    a.observe(2);
    const text = await ours.metrics();
    expect(text).to.include('h_seconds_count{method="GET",route="/a"} 1');
    expect(text).to.include('h_seconds_bucket{le="1",method="GET",route="/a"} 0');
  });

  it('refuses a missing label and a value that is not a finite number', () => {
    const { histogram } = both();
    expect(() => histogram.labels({ method: 'GET' } as never)).to.throw(/needs label route/);
    expect(() => histogram.labels({ method: 'GET', route: '/' }).observe(Number.NaN)).to.throw(TypeError);
  });
});
