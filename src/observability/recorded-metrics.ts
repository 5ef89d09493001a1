import type { Metric, Registry } from 'prom-client';

/**
 * Counters and histograms for the per-request metrics: recording is an addition on the series of
 * a label set bound once, instead of prom-client's work on every call (label validation and
 * hashing, a closure: 140–340 ns per observation, five to seven per request). A registry exposes
 * them exactly as it exposes prom-client's own (the same values in the same order, checked
 * against prom-client in test/observability/recorded-metrics.test.ts).
 */

/** prom-client's value pairs, which its registry formats. */
interface ValuePair {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName?: string;
  exemplar?: null;
}

function labelsOf(names: readonly string[], values: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  names.forEach((name, i) => (labels[name] = values[i]));
  return labels;
}

type Exposition = { name: string; help: string; type: string; values: ValuePair[]; aggregator: string };

/** The series of a metric by label set, and the binding of one label set for the hot path. */
abstract class RecordedMetric<Series extends { labels: Record<string, string> }> {
  readonly aggregator = 'sum';
  protected series = new Map<string, Series>();
  /** Bumped by a reset, which drops every series: a bound label set then finds (or makes) its new one. */
  private generation = 0;

  /** `name` stays writable: a registry renames counters for the OpenMetrics format. */
  constructor(
    public name: string,
    readonly help: string,
    protected readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  protected abstract newSeries(labels: Record<string, string>): Series;

  /** The current series of one label set (values in `labelNames` order), looked up once per reset. */
  protected bind(values: readonly string[]): () => Series {
    const key = values.join('\u0000');
    let series = this.seriesOf(key, values);
    let generation = this.generation;
    return () => {
      if (generation !== this.generation) {
        series = this.seriesOf(key, values);
        generation = this.generation;
      }
      return series;
    };
  }

  protected seriesOf(key: string, values: readonly string[]): Series {
    let series = this.series.get(key);
    if (series === undefined) {
      series = this.newSeries(labelsOf(this.labelNames, values));
      this.series.set(key, series);
    }
    return series;
  }

  protected dropAll(): void {
    this.generation++;
    this.series = new Map();
  }
}

interface CounterSeries {
  labels: Record<string, string>;
  value: number;
}

export class RecordedCounter extends RecordedMetric<CounterSeries> {
  readonly type = 'counter';

  constructor(name: string, help: string, labelNames: readonly string[], registry: Registry) {
    super(name, help, labelNames, registry);
    this.reset();
  }

  /** The series of one label set (values in `labelNames` order); bind it once, then `inc` it. */
  labels(...values: string[]): { inc(by?: number): void } {
    const current = this.bind(values);
    return { inc: (by = 1) => void (current().value += by) };
  }

  reset(): void {
    this.dropAll();
    // as prom-client: a counter without labels is exposed (at 0) before its first increment
    if (this.labelNames.length === 0) this.seriesOf('', []);
  }

  async get(): Promise<Exposition> {
    const values = [...this.series.values()].map(({ value, labels }) => ({ value, labels }));
    return { help: this.help, name: this.name, type: this.type, values, aggregator: this.aggregator };
  }

  protected newSeries(labels: Record<string, string>): CounterSeries {
    return { labels, value: 0 };
  }
}

interface HistogramSeries {
  labels: Record<string, string>;
  /** Observations per bucket (not cumulative); above the last bound only `count` grows. */
  buckets: number[];
  sum: number;
  count: number;
}

export class RecordedHistogram extends RecordedMetric<HistogramSeries> {
  readonly type = 'histogram';

  constructor(
    name: string,
    help: string,
    private readonly upperBounds: readonly number[],
    labelNames: readonly string[],
    registry: Registry,
  ) {
    super(name, help, labelNames, registry);
    // as prom-client: a histogram without labels is exposed (all zero) before its first observation
    if (labelNames.length === 0) this.seriesOf('', []);
  }

  /** The series of one label set (values in `labelNames` order); bind it once, then `observe` on it. */
  labels(...values: string[]): { observe(value: number): void } {
    const current = this.bind(values);
    return { observe: (value) => this.record(current(), value) };
  }

  /** For a histogram without labels. */
  observe(value: number): void {
    this.record(this.seriesOf('', []), value);
  }

  /** As prom-client's: every series goes, a histogram without labels included (until observed again). */
  reset(): void {
    this.dropAll();
  }

  /** The text format's pairs, as prom-client's Histogram gives them to its registry. */
  async getForPromString(): Promise<Exposition> {
    const values: ValuePair[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const series of this.series.values()) {
      let cumulative = 0;
      this.upperBounds.forEach((le, i) => {
        cumulative += series.buckets[i];
        values.push({ labels: { le }, sharedLabels: series.labels, value: cumulative, metricName: bucketName, exemplar: null });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: bucketName, exemplar: null });
      values.push({ labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum`, exemplar: undefined });
      values.push({ labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count`, exemplar: undefined });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** As prom-client's: the same pairs with each series' labels merged into `labels`. */
  async get(): Promise<Exposition> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }));
    return data;
  }

  protected newSeries(labels: Record<string, string>): HistogramSeries {
    return { labels, buckets: this.upperBounds.map(() => 0), sum: 0, count: 0 };
  }

  private record(series: HistogramSeries, value: number): void {
    // a duration that is not a number is a bug upstream of here, not worth failing a request for
    if (!Number.isFinite(value)) return;
    series.sum += value;
    series.count++;
    const bounds = this.upperBounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        series.buckets[i]++;
        return;
      }
    }
  }
}
