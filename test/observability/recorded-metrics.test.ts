import { Counter, Histogram, Registry, type RegistryContentType } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RecordedCounter, RecordedHistogram } from '../../src/observability/recorded-metrics.js';

const BOUNDS = [0.001, 0.01, 0.1, 1, 10];

/** The same metrics twice: prom-client's own in one registry, the recorded ones in another. */
function pair() {
  const reference = new Registry();
  const recorded = new Registry();
  const ref = {
    requests: new Counter({ name: 'x_requests_total', help: 'Requests', labelNames: ['route', 'status'], registers: [reference] }),
    total: new Counter({ name: 'x_all_total', help: 'All', registers: [reference] }),
    duration: new Histogram({ name: 'x_duration_seconds', help: 'Duration', labelNames: ['route', 'method'], buckets: BOUNDS, registers: [reference] }),
    rounds: new Histogram({ name: 'x_rounds', help: 'Rounds', buckets: [1, 2, 5], registers: [reference] }),
    idle: new Histogram({ name: 'x_idle_seconds', help: 'Never observed', buckets: BOUNDS, registers: [reference] }),
  };
  const rec = {
    requests: new RecordedCounter('x_requests_total', 'Requests', ['route', 'status'], recorded),
    total: new RecordedCounter('x_all_total', 'All', [], recorded),
    duration: new RecordedHistogram('x_duration_seconds', 'Duration', BOUNDS, ['route', 'method'], recorded),
    rounds: new RecordedHistogram('x_rounds', 'Rounds', [1, 2, 5], [], recorded),
    idle: new RecordedHistogram('x_idle_seconds', 'Never observed', BOUNDS, [], recorded),
  };
  return { reference, recorded, ref, rec };
}

async function expectSameExposition(reference: Registry, recorded: Registry): Promise<void> {
  expect(await recorded.metrics()).toBe(await reference.metrics());
  expect(await recorded.getMetricsAsJSON()).toEqual(await reference.getMetricsAsJSON());
}

describe('recorded metrics (counters and histograms without per-call label work)', () => {
  it('are exposed exactly as prom-client exposes the same observations, in both text formats', async () => {
    const { reference, recorded, ref, rec } = pair();
    // before anything is recorded: unlabelled series at zero, labelled ones absent
    await expectSameExposition(reference, recorded);

    const observations: Array<[string, string, number]> = [
      ['/v1/responses', 'POST', 0.0004],
      ['/v1/responses', 'POST', 0.01], // exactly on a bound
      ['/v1/models', 'GET', 3.5],
      ['/v1/responses', 'POST', 42], // above the last bound: only +Inf, sum and count
      ['/v1/models', 'GET', 0],
    ];
    for (const [route, method, seconds] of observations) {
      ref.duration.labels(route, method).observe(seconds);
      rec.duration.labels(route, method).observe(seconds);
    }
    const okRef = ref.requests.labels('/v1/responses', '200');
    const okRec = rec.requests.labels('/v1/responses', '200');
    okRef.inc();
    okRec.inc();
    okRef.inc(2);
    okRec.inc(2);
    ref.requests.labels('/v1/models', '404').inc();
    rec.requests.labels('/v1/models', '404').inc();
    ref.total.inc(5);
    rec.total.labels().inc(5);
    for (const rounds of [1, 3, 6, 2]) {
      ref.rounds.observe(rounds);
      rec.rounds.observe(rounds);
    }
    await expectSameExposition(reference, recorded);

    for (const registry of [reference, recorded]) (registry as unknown as Registry<RegistryContentType>).setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    expect(await recorded.metrics()).toBe(await reference.metrics());
  });

  it('reset as prom-client resets', async () => {
    const { reference, recorded, ref, rec } = pair();
    ref.duration.labels('/a', 'GET').observe(1);
    rec.duration.labels('/a', 'GET').observe(1);
    ref.total.inc();
    rec.total.labels().inc();
    reference.resetMetrics();
    recorded.resetMetrics();
    await expectSameExposition(reference, recorded);
  });

  it('skip an observation that is not a finite number instead of failing the request', async () => {
    const { recorded, rec } = pair();
    rec.rounds.observe(Number.NaN);
    rec.rounds.observe(2);
    expect(await recorded.metrics()).toContain('x_rounds_count 1');
  });
});

describe('recorded metrics after a reset', () => {
  it('a series bound before the reset records into the new one', async () => {
    const { reference, recorded, ref, rec } = pair();
    const refChild = ref.duration.labels('/a', 'GET');
    const recChild = rec.duration.labels('/a', 'GET');
    const recCounter = rec.requests.labels('/a', '200');
    refChild.observe(1);
    recChild.observe(1);
    reference.resetMetrics();
    recorded.resetMetrics();
    refChild.observe(0.005);
    recChild.observe(0.005);
    ref.requests.labels('/a', '200').inc();
    recCounter.inc();
    ref.rounds.observe(2);
    rec.rounds.observe(2);
    await expectSameExposition(reference, recorded);
  });
});
