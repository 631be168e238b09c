import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { percentile, round, sleep, split, within } from './util';

export type LatencyMs = { p50: number | null; p90: number | null; p99: number | null; max: number | null };

/** What a fixed-duration, as-fast-as-it-goes run answered, all autocannon instances summed. */
export type HammerResult = {
  /** autocannon instances, one per target URL. */
  instances: number;
  connections: number;
  durationS: number;
  requests: number;
  ok2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** 2xx answers per second. */
  okPerSecond: number;
  statusCodes: Record<string, number>;
  /**
   * autocannon's latency percentiles. With several instances: p50 is the request-weighted mean of theirs,
   * p90, p99 and max the highest of theirs (no merged histogram is available).
   */
  latencyMs: LatencyMs;
};

export type HammerOptions = {
  /** One autocannon instance per URL, run at once, the connections split between them. */
  urls: string[];
  connections: number;
  durationS: number;
  method: 'POST';
  path: string;
  headers: Record<string, string>;
  /** The body of the n-th request (n counts across instances, so bodies never repeat). */
  body: (n: number) => string;
};

/**
 * autocannon, programmatically: `connections` keep-alive connections, each sending its next request as soon
 * as the previous answer is in, for `durationS`. Every request's body is built just before it is sent
 * (`requests[0].setupRequest`).
 */
export async function hammer(opts: HammerOptions): Promise<HammerResult> {
  const shares = split(opts.connections, opts.urls.length);
  const results = await within(
    'autocannon',
    (opts.durationS + 30) * 1000,
    Promise.all(
      opts.urls.map((url, k) => {
        let n = 0;
        return autocannon({
          url,
          connections: shares[k]!,
          duration: opts.durationS,
          pipelining: 1,
          timeout: 10,
          method: opts.method,
          headers: opts.headers,
          requests: [
            {
              method: opts.method,
              path: opts.path,
              setupRequest: (req) => ({ ...req, body: opts.body(k + opts.urls.length * n++) }),
            },
          ],
        });
      }),
    ),
  );
  const sum = (f: (r: autocannon.Result) => number) => results.reduce((s, r) => s + f(r), 0);
  const requests = sum((r) => r.requests.total);
  const durationS = Math.max(...results.map((r) => r.duration));
  const statusCodes: Record<string, number> = {};
  for (const r of results) {
    for (const [code, stat] of Object.entries(r.statusCodeStats ?? {})) {
      statusCodes[code] = (statusCodes[code] ?? 0) + (stat.count ?? 0);
    }
  }
  const ok2xx = sum((r) => r['2xx']);
  return {
    instances: results.length,
    connections: opts.connections,
    durationS: round(durationS, 2),
    requests,
    ok2xx,
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    okPerSecond: round(ok2xx / durationS),
    statusCodes,
    latencyMs: {
      p50: round(requests ? sum((r) => r.latency.p50 * r.requests.total) / requests : 0, 1),
      p90: Math.max(...results.map((r) => r.latency.p90)),
      p99: Math.max(...results.map((r) => r.latency.p99)),
      max: Math.max(...results.map((r) => r.latency.max)),
    },
  };
}

export type PacedResult = {
  rate: number;
  durationS: number;
  sent: number;
  ok2xx: number;
  failed: number;
  statusCodes: Record<string, number>;
  /** Request sent → answer read, for every answer. */
  latencyMs: LatencyMs;
};

/**
 * A fixed request rate, whatever the answers do (an open loop: a slow answer does not delay the next request,
 * so queueing shows in the latencies instead of lowering the rate). Requests go round-robin to `urls` over
 * `connections` keep-alive connections. `onOk` gets each 2xx answer's JSON and the wall-clock time its
 * request was sent.
 */
export async function paced(opts: {
  urls: string[];
  rate: number;
  durationS: number;
  connections: number;
  path: string;
  headers: Record<string, string>;
  body: (n: number) => string;
  onOk: (json: any, sentAtMs: number) => void;
}): Promise<PacedResult> {
  const pools = opts.urls.map(
    (url, k) =>
      new Pool(url, {
        connections: split(opts.connections, opts.urls.length)[k]!,
        pipelining: 1,
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      }),
  );
  const total = Math.round(opts.rate * opts.durationS);
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let ok2xx = 0;
  let failed = 0;
  const inFlight = new Set<Promise<void>>();
  const fire = (n: number) => {
    const sentAt = Date.now();
    const t0 = performance.now();
    const p = pools[n % pools.length]!.request({
      method: 'POST',
      path: opts.path,
      headers: opts.headers,
      body: opts.body(n),
    })
      .then(async (res) => {
        const text = await res.body.text();
        latencies.push(performance.now() - t0);
        statusCodes[res.statusCode] = (statusCodes[res.statusCode] ?? 0) + 1;
        if (res.statusCode >= 200 && res.statusCode < 300) {
          ok2xx += 1;
          opts.onOk(JSON.parse(text), sentAt);
        }
      })
      .catch(() => {
        failed += 1;
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  const started = performance.now();
  let sent = 0;
  try {
    while (sent < total) {
      const due = Math.min(total, Math.floor(((performance.now() - started) * opts.rate) / 1000) + 1);
      while (sent < due) fire(sent++);
      await sleep(1);
    }
    await within('the paced requests still in flight', 30_000, Promise.all(inFlight));
  } finally {
    await Promise.all(pools.map((pool) => pool.destroy()));
  }
  const durationS = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (p: number) => {
    const v = percentile(latencies, p);
    return v === null ? null : round(v, 1);
  };
  return {
    rate: opts.rate,
    durationS: round(durationS, 2),
    sent,
    ok2xx,
    failed,
    statusCodes,
    latencyMs: { p50: at(50), p90: at(90), p99: at(99), max: at(100) },
  };
}
