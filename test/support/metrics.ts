import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { expect } from 'vitest';

export type Scrape = {
  /** Every family the text held, by name. */
  names: Set<string>;
  /** The value of a counter or gauge sample whose labels include `labels`, summed over the samples that match. */
  value(name: string, labels?: Record<string, string>): number;
  /** A histogram's sample count, summed over the series whose labels include `labels`. */
  count(name: string, labels?: Record<string, string>): number;
};

/**
 * A `/metrics` answer read with a Prometheus text-format parser from npm (never by our own regular expressions),
 * so what the test checks is what a Prometheus server would read.
 */
export function parseMetrics(text: string): Scrape {
  const families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
  const matching = (name: string, labels: Record<string, string>) => {
    const family = families.get(name);
    if (!family) throw new Error(`no metric ${name} in the scrape`);
    return family.metrics.filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  };
  return {
    names: new Set(families.keys()),
    value: (name, labels = {}) => matching(name, labels).reduce((sum, m) => sum + Number(m.value), 0),
    count: (name, labels = {}) => matching(name, labels).reduce((sum, m) => sum + Number(m.count), 0),
  };
}

/** `GET url` (a `/metrics`) with the bearer `token`: answered 200 in Prometheus's text format, and parsed. */
export async function scrapeMetrics(url: string, token: string): Promise<Scrape> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(await res.text());
}
