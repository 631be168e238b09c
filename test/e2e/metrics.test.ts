import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { client, eventually, overHttp } from '../support/client';
import { makeWorld, uniqueEmail } from '../support/factories';
import { scrapeMetrics } from '../support/metrics';
import { useReceivers } from '../support/receiver';
import { useTestStack } from '../support/use';
import { messageCounts, registerEndpoint } from '../support/webhooks';

const METRICS_TOKEN = 'metrics_test_token_0123456789';
// Every role in one process, as the tests run them: one registry, which the API's /metrics and the
// listener both show.
const stack = useTestStack({ http: true, dispatcher: true, metricsToken: METRICS_TOKEN, metricsPort: 0 });
const receiver = useReceivers();
const ROOMY = { second: 1000, minute: 1000, hour: 1000, concurrency: 10, slowdownAfter: 0 };

const scrape = (url: string, token = METRICS_TOKEN) => scrapeMetrics(url, token);
const apiMetrics = () => scrape(`${stack.baseUrl}/metrics`);

describe('/metrics counts the work done, as a Prometheus server reads it', () => {
  it('actions accepted and applied, attempts by outcome, deliveries, refusals and requests match what happened', async () => {
    const before = await apiMetrics();
    const w = await makeWorld(stack.ctx, {
      account: { rateLimits: ROOMY },
      reward: { conversionsRequired: 1, isUnlimited: true },
    });
    // Every third message's first attempt fails (500): retried, it succeeds. Chosen by message, not by the
    // request's place in the order: when failing every third request, a message whose retries kept falling on
    // every third request ran out of its schedule under load (FAILED after four 500s, once in CI).
    const firstSeen = new Set<string>();
    let failures = 0;
    const hooks = await receiver((r) => {
      const id = String(r.headers['webhook-id']);
      if (firstSeen.has(id)) return {};
      firstSeen.add(id);
      if (firstSeen.size % 3 !== 0) return {};
      failures += 1;
      return { status: 500 };
    });
    const endpoint = await registerEndpoint(stack, w.campaign.id, { url: hooks.url, kind: 'FULFILMENT' });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const N = 12;
    for (let i = 0; i < N; i++) {
      const res = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: uniqueEmail('metrics'),
        rewardId: w.reward.id,
      });
      expect(res.status).toBe(200);
    }
    // A key held to 2 requests per 5 s: of 5 requests, 3 are refused by the SECOND policy.
    const tight = await makeWorld(stack.ctx, { account: { rateLimits: { ...ROOMY, second: 2 } } });
    const limited = client(overHttp(stack.baseUrl!), tight.key);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++)
      statuses.push((await limited.get(`/v1/campaign/${tight.campaign.id}`)).status);
    expect(statuses).toEqual([200, 200, 429, 429, 429]);

    const settled = await eventually(
      () => messageCounts(stack, endpoint.id),
      (c) => Object.keys(c).length > 0 && Object.keys(c).every((k) => k === 'SUCCEEDED@0'),
      20_000,
    );
    const messages = settled['SUCCEEDED@0']!;
    expect(messages).toBeGreaterThanOrEqual(N);
    expect(failures).toBeGreaterThan(0);
    expect(hooks.received).toHaveLength(messages + failures);

    // The dispatcher counts an attempt once its record has committed, so the rows can show it a moment before
    // the counters do: scrape until the last success is counted (the figures below must then match exactly).
    type Scraped = Awaited<ReturnType<typeof apiMetrics>>;
    const since = (now: Scraped, name: string, labels?: Record<string, string>) =>
      now.value(name, labels) - (before.names.has(name) ? before.value(name, labels) : 0);
    const after = await eventually(
      apiMetrics,
      (now) =>
        since(now, 'stampcard_webhook_attempts_total', { outcome: 'succeeded' }) >= messages &&
        since(now, 'stampcard_webhook_messages_settled_total', { status: 'SUCCEEDED' }) >= messages,
      10_000,
    ).catch(() => apiMetrics());
    const delta = (name: string, labels?: Record<string, string>) => since(after, name, labels);
    const deltaCount = (name: string, labels?: Record<string, string>) =>
      after.count(name, labels) - (before.names.has(name) ? before.count(name, labels) : 0);

    expect(delta('stampcard_loyalty_actions_accepted_total')).toBe(N);
    expect(delta('stampcard_loyalty_actions_applied_total', { status: 'APPLIED' })).toBe(N);
    expect(deltaCount('stampcard_loyalty_action_apply_lag_seconds')).toBe(N);
    expect(delta('stampcard_webhook_attempts_total', { outcome: 'succeeded' })).toBe(messages);
    expect(delta('stampcard_webhook_attempts_total', { outcome: 'failed', error_class: 'HTTP_STATUS' })).toBe(
      failures,
    );
    expect(deltaCount('stampcard_webhook_attempt_duration_seconds')).toBe(messages + failures);
    expect(delta('stampcard_webhook_messages_settled_total', { status: 'SUCCEEDED' })).toBe(messages);
    expect(deltaCount('stampcard_webhook_delivery_lag_seconds')).toBe(messages);
    expect(delta('stampcard_rate_limit_refusals_total', { limit: 'SECOND' })).toBe(3);

    // Requests by route template, never by the path sent.
    const trigger = { http_route: '/v1/campaign/:id/loyalty-action', http_request_method: 'POST' };
    expect(
      deltaCount('http_server_request_duration_seconds', { ...trigger, http_response_status_code: '200' }),
    ).toBe(N);
    expect(
      deltaCount('http_server_request_duration_seconds', {
        http_route: '/v1/campaign/:id',
        http_response_status_code: '429',
      }),
    ).toBe(3);
    expect(
      after.count('http_server_request_duration_seconds', { http_route: `/v1/campaign/${w.campaign.id}` }),
    ).toBe(0);

    // Queues, pools and the process, read when scraped.
    expect(after.value('stampcard_queue_jobs', { queue: 'loyalty-action-batches', state: 'waiting' })).toBe(
      0,
    );
    expect(after.value('stampcard_queue_jobs', { queue: 'webhook-deliveries', state: 'failed' })).toBe(0);
    expect(after.value('stampcard_db_client_connections_max', { pool: 'api' })).toBe(10);
    expect(after.value('stampcard_db_client_connections_max', { pool: 'worker' })).toBe(6);
    expect(after.value('process_resident_memory_bytes')).toBeGreaterThan(0);
    // Partitions: made ahead (two weeks past this one at least), none overdue, no row waiting for one.
    for (const table of ['events', 'webhook_messages', 'webhook_attempts', 'audit_log']) {
      expect(after.value('stampcard_partitions', { table })).toBeGreaterThanOrEqual(3);
      expect(after.value('stampcard_partitions_ahead_seconds', { table })).toBeGreaterThan(7 * 86_400);
      expect(after.value('stampcard_partitions_overdue', { table })).toBe(0);
      expect(after.value('stampcard_partition_default_rows', { table })).toBe(0);
    }
  });

  it('the oldest waiting job is reported by its age, and the queue by its depth', async () => {
    await stack.stopWorker();
    try {
      const w = await makeWorld(stack.ctx, { account: { rateLimits: ROOMY } });
      const api = client(overHttp(stack.baseUrl!), w.key);
      for (let i = 0; i < 3; i++) {
        const res = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
          participantEmail: uniqueEmail('waiting'),
          rewardId: w.reward.id,
        });
        expect(res.status).toBe(200);
      }
      // The gauges are read at most every 5 s: wait for a reading that sees the jobs, then for their age.
      const seen = await eventually(
        apiMetrics,
        (m) =>
          m.value('stampcard_queue_jobs', { state: 'waiting' }) >= 1 &&
          m.value('stampcard_queue_oldest_job_age_seconds', { state: 'waiting' }) >= 1,
        15_000,
      );
      expect(seen.value('stampcard_queue_jobs', { state: 'waiting' })).toBeLessThanOrEqual(3);
    } finally {
      stack.startWorker();
    }
  });
});

describe('the alert rules and the dashboard in deploy/ read metrics the service exports', () => {
  it("every metric an alert or a panel reads is in /metrics (the others are Prometheus's up, node_exporter's)", async () => {
    const served = (await apiMetrics()).names;
    const alerts = parseYaml(readFileSync('deploy/prometheus/alerts.yml', 'utf8')) as {
      groups: { rules: { alert: string; expr: string; labels: { severity: string } }[] }[];
    };
    const rules = alerts.groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThanOrEqual(10);
    const dashboard = JSON.parse(readFileSync('deploy/grafana/dashboards/stampcard.json', 'utf8')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const exprs = [
      ...rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: `panel ${p.title}`, expr: t.expr }))),
    ];
    const missing: string[] = [];
    for (const { where, expr } of exprs) {
      for (const [name] of expr.matchAll(/\b(?:stampcard|http_server|process|nodejs)_[a-z0-9_]+/g)) {
        const family = name.replace(/_(bucket|count|sum)$/, '');
        if (!served.has(family) && !served.has(name)) missing.push(`${where}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
    expect(new Set(rules.map((r) => r.labels.severity))).toEqual(new Set(['critical', 'warning', 'info']));
  });
});

describe('who may read the metrics, and the probes', () => {
  it('the API refuses /metrics without the token (401) and answers /livez and /readyz without one', async () => {
    for (const authorization of [undefined, 'Bearer wrong_token_0123456789', `Basic ${METRICS_TOKEN}`]) {
      const res = await fetch(`${stack.baseUrl}/metrics`, {
        headers: authorization ? { authorization } : {},
      });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ code: 'AUTHENTICATION_REQUIRED', status: 401 });
    }
    const live = await fetch(`${stack.baseUrl}/livez`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${stack.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } });
  });

  it("a worker's or dispatcher's listener serves the same metrics, /livez and /readyz, and 404 elsewhere", async () => {
    const base = `http://127.0.0.1:${stack.metricsPort}`;
    const m = await scrape(`${base}/metrics`);
    expect(m.names.has('stampcard_webhook_attempts_total')).toBe(true);
    expect(m.names.has('stampcard_queue_jobs')).toBe(true);
    const refused = await fetch(`${base}/metrics`);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: 'AUTHENTICATION_REQUIRED', status: 401 });
    expect((await fetch(`${base}/livez`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } });
    expect((await fetch(`${base}/other`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
  });
});

describe('without METRICS_TOKEN', () => {
  const bare = useTestStack({ http: true, metricsPort: 0 });
  it('/metrics is refused to everyone, 403, on the API and on the listener', async () => {
    for (const url of [`${bare.baseUrl}/metrics`, `http://127.0.0.1:${bare.metricsPort}/metrics`]) {
      const res = await fetch(url, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ code: 'NOT_AUTHORIZED', status: 403 });
    }
  });
});
