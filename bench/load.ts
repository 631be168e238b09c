import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { percentile, round, sleep, split, within } from './util';
import { type BodyTemplate, hasWrk, renderBody, runWrk, type WrkResult } from './wrk';

/**
 * The load generator of the fixed-duration runs: wrk when it is installed (it costs a fraction of the server it
 * drives, so it is not what limits a bare server), autocannon otherwise (a Node.js process of its own, which
 * takes about a core: the bare baseline then measures autocannon as much as the server). `BENCH_LOAD=autocannon`
 * chooses autocannon even where wrk is installed.
 */
export const LOAD_GENERATOR: 'wrk' | 'autocannon' =
  process.env.BENCH_LOAD !== 'autocannon' && hasWrk() ? 'wrk' : 'autocannon';

export type LatencyMs = { p50: number | null; p90: number | null; p99: number | null; max: number | null };

/** What a fixed-duration, as-fast-as-it-goes run answered, all instances summed. */
export type HammerResult = {
  /** The load generator that ran. */
  tool: 'wrk' | 'autocannon';
  /** Load generator processes (wrk) or instances (autocannon), one per target URL. */
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
   * The load generator's latency percentiles. With several instances: p50 is the request-weighted mean of
   * theirs, p90, p99 and max the highest of theirs (no merged histogram is available).
   */
  latencyMs: LatencyMs;
};

export type HammerOptions = {
  /** One load generator instance per URL, run at once, the connections split between them. */
  urls: string[];
  connections: number;
  durationS: number;
  method: 'POST';
  path: string;
  headers: Record<string, string>;
  /** The body of each request (numbered across instances, so bodies never repeat). */
  body: BodyTemplate;
  /**
   * The first request's number (a warm-up takes numbers the measured run does not).
   * @defaultValue 0
   */
  first?: number;
};

/**
 * `connections` keep-alive connections, each sending its next POST as soon as the previous answer is in, for
 * `durationS`, by `LOAD_GENERATOR`.
 */
export function hammer(opts: HammerOptions): Promise<HammerResult> {
  return LOAD_GENERATOR === 'wrk' ? hammerWrk(opts) : hammerAutocannon(opts);
}

/** Several results as one: counts summed, latencies as `HammerResult.latencyMs` says. */
function merged(
  opts: HammerOptions,
  tool: HammerResult['tool'],
  results: (WrkResult & { ok2xx: number; non2xx: number })[],
): HammerResult {
  const sum = (f: (r: (typeof results)[number]) => number) => results.reduce((s, r) => s + f(r), 0);
  const requests = sum((r) => r.requests);
  const durationS = Math.max(...results.map((r) => r.durationS));
  const statusCodes: Record<string, number> = {};
  for (const r of results) {
    for (const [code, count] of Object.entries(r.statusCodes)) {
      statusCodes[code] = (statusCodes[code] ?? 0) + count;
    }
  }
  const ok2xx = sum((r) => r.ok2xx);
  return {
    tool,
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
      p50: round(requests ? sum((r) => r.latencyMs.p50 * r.requests) / requests : 0, 2),
      p90: Math.max(...results.map((r) => r.latencyMs.p90)),
      p99: Math.max(...results.map((r) => r.latencyMs.p99)),
      max: Math.max(...results.map((r) => r.latencyMs.max)),
    },
  };
}

async function hammerWrk(opts: HammerOptions): Promise<HammerResult> {
  const shares = split(opts.connections, opts.urls.length);
  const results = await within(
    'wrk',
    (opts.durationS + 30) * 1000,
    Promise.all(
      opts.urls.map((url, k) =>
        runWrk({
          url,
          connections: shares[k]!,
          durationS: opts.durationS,
          path: opts.path,
          headers: opts.headers,
          body: opts.body,
          first: opts.first ?? 0,
          instance: k,
          instances: opts.urls.length,
        }),
      ),
    ),
  );
  return merged(
    opts,
    'wrk',
    results.map((r) => {
      const ok2xx = Object.entries(r.statusCodes)
        .filter(([code]) => code.startsWith('2'))
        .reduce((s, [, n]) => s + n, 0);
      return { ...r, ok2xx, non2xx: r.requests - ok2xx - r.errors };
    }),
  );
}

async function hammerAutocannon(opts: HammerOptions): Promise<HammerResult> {
  const shares = split(opts.connections, opts.urls.length);
  const first = opts.first ?? 0;
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
              setupRequest: (req) => ({
                ...req,
                body: renderBody(opts.body, first + k + opts.urls.length * n++),
              }),
            },
          ],
        });
      }),
    ),
  );
  return merged(
    opts,
    'autocannon',
    results.map((r) => {
      const statusCodes: Record<string, number> = {};
      for (const [code, stat] of Object.entries(r.statusCodeStats ?? {})) {
        statusCodes[code] = stat.count ?? 0;
      }
      return {
        requests: r.requests.total,
        ok2xx: r['2xx'],
        non2xx: r.non2xx,
        errors: r.errors,
        timeouts: r.timeouts,
        durationS: r.duration,
        statusCodes,
        latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
      };
    }),
  );
}

export type PacedResult = {
  rate: number;
  durationS: number;
  sent: number;
  ok2xx: number;
  failed: number;
  statusCodes: Record<string, number>;
  /**
   * Requests still unanswered when the wait for them ended (`drainMs` after the last was sent): a service that
   * cannot keep up with the rate. They count in `latencyMs` with the time they had waited, so the percentiles
   * are then lower bounds.
   */
  unanswered: number;
  /** Request sent → answer read, for every answer (and every request left unanswered, see `unanswered`). */
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
  body: BodyTemplate;
  /**
   * The first request's number (a warm-up takes numbers the measured run does not).
   * @defaultValue 0
   */
  first?: number;
  /**
   * Longest to wait, once the last request is sent, for the answers still to come; past it, those left are
   * counted (`unanswered`) rather than failing the run.
   * @defaultValue the run's own duration, and at least 30 s
   */
  drainMs?: number;
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
  let gaveUp = false;
  /** Each request not yet answered, with when it was sent (`performance.now()`). */
  const inFlight = new Map<Promise<void>, number>();
  const fire = (n: number) => {
    const sentAt = Date.now();
    const t0 = performance.now();
    const p = pools[n % pools.length]!.request({
      method: 'POST',
      path: opts.path,
      headers: opts.headers,
      body: renderBody(opts.body, (opts.first ?? 0) + n),
    })
      .then(async (res) => {
        const text = await res.body.text();
        // Counted already, unanswered, when the wait for the last answers ended.
        if (gaveUp) return;
        latencies.push(performance.now() - t0);
        statusCodes[res.statusCode] = (statusCodes[res.statusCode] ?? 0) + 1;
        if (res.statusCode >= 200 && res.statusCode < 300) {
          ok2xx += 1;
          opts.onOk(JSON.parse(text), sentAt);
        }
      })
      .catch(() => {
        if (!gaveUp) failed += 1;
      })
      .finally(() => inFlight.delete(p));
    inFlight.set(p, t0);
  };
  const started = performance.now();
  let sent = 0;
  let unanswered = 0;
  try {
    while (sent < total) {
      const due = Math.min(total, Math.floor(((performance.now() - started) * opts.rate) / 1000) + 1);
      while (sent < due) fire(sent++);
      await sleep(1);
    }
    const drainMs = opts.drainMs ?? Math.max(30_000, opts.durationS * 1000);
    await within('the paced requests still in flight', drainMs, Promise.all(inFlight.keys())).catch(() => {
      // A service that fell behind the rate: what it has not answered counts with the time it waited so far.
      const now = performance.now();
      gaveUp = true;
      unanswered = inFlight.size;
      for (const t0 of inFlight.values()) latencies.push(now - t0);
      inFlight.clear();
    });
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
    unanswered,
    latencyMs: { p50: at(50), p90: at(90), p99: at(99), max: at(100) },
  };
}

/** One stage's time across the answers that reported it (`Server-Timing`), in ms. */
export type StageMs = { stage: string; answers: number; mean: number; p50: number; p99: number };

export type ClosedLoopResult = {
  connections: number;
  requests: number;
  ok2xx: number;
  perSecond: number;
  latencyMs: LatencyMs;
  /** Each stage the API reported in `Server-Timing`, in the order first seen; `total` is its own total. */
  stages: StageMs[];
};

/** `Server-Timing: a;dur=1.2, b;dur=0.3` as [name, ms] pairs. */
function serverTiming(header: string | string[] | undefined): [string, number][] {
  const text = Array.isArray(header) ? header.join(',') : (header ?? '');
  const out: [string, number][] = [];
  for (const entry of text.split(',')) {
    const [name, ...params] = entry.trim().split(';');
    const dur = params.map((p) => p.trim()).find((p) => p.startsWith('dur='));
    if (name && dur) out.push([name, Number(dur.slice(4))]);
  }
  return out;
}

/**
 * `requests` POSTs over `connections` keep-alive connections, each connection sending its next request once
 * the previous answer is in (with 1: one caller, one action at a time), every latency kept, and the API's
 * `Server-Timing` stages summed per stage (the API runs with `SERVER_TIMING=true`).
 */
export async function closedLoop(opts: {
  url: string;
  connections: number;
  requests: number;
  path: string;
  headers: Record<string, string>;
  body: BodyTemplate;
  first: number;
}): Promise<ClosedLoopResult> {
  const pool = new Pool(opts.url, {
    connections: opts.connections,
    pipelining: 1,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const latencies: number[] = [];
  const stages = new Map<string, number[]>();
  let next = 0;
  let ok2xx = 0;
  const started = performance.now();
  try {
    await within(
      'the closed-loop requests',
      Math.max(60_000, opts.requests * 50),
      Promise.all(
        Array.from({ length: opts.connections }, async () => {
          while (next < opts.requests) {
            const n = opts.first + next++;
            const t0 = performance.now();
            const res = await pool.request({
              method: 'POST',
              path: opts.path,
              headers: opts.headers,
              body: renderBody(opts.body, (opts.first ?? 0) + n),
            });
            await res.body.text();
            latencies.push(performance.now() - t0);
            if (res.statusCode < 200 || res.statusCode >= 300) continue;
            ok2xx += 1;
            for (const [name, ms] of serverTiming(res.headers['server-timing'])) {
              const list = stages.get(name) ?? [];
              if (list.length === 0) stages.set(name, list);
              list.push(ms);
            }
          }
        }),
      ),
    );
  } finally {
    await pool.destroy();
  }
  const seconds = (performance.now() - started) / 1000;
  const at = (sorted: number[], p: number) => {
    const v = percentile(sorted, p);
    return v === null ? null : round(v, 2);
  };
  latencies.sort((a, b) => a - b);
  return {
    connections: opts.connections,
    requests: opts.requests,
    ok2xx,
    perSecond: round(ok2xx / seconds),
    latencyMs: {
      p50: at(latencies, 50),
      p90: at(latencies, 90),
      p99: at(latencies, 99),
      max: at(latencies, 100),
    },
    stages: [...stages].map(([stage, list]) => {
      list.sort((a, b) => a - b);
      return {
        stage,
        answers: list.length,
        mean: round(list.reduce((s, v) => s + v, 0) / list.length, 2),
        p50: at(list, 50) ?? 0,
        p99: at(list, 99) ?? 0,
      };
    }),
  };
}
