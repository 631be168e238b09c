import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTracing, type Tracing } from '@stampcard/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../support/client';
import { createTestDb, type TestDb } from '../support/db';
import { makeWorld, uniqueEmail } from '../support/factories';
import { useReceivers } from '../support/receiver';
import { createTestStack, type TestStack } from '../support/stack';
import { registerEndpoint } from '../support/webhooks';

type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
};

/** A collector of our own: OTLP over HTTP, as JSON, to `/v1/traces`; it keeps every span it is sent. */
async function startCollector() {
  const spans: OtlpSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
        };
        for (const r of body.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => server.close(),
  };
}

let collector: Awaited<ReturnType<typeof startCollector>>;
let tracing: Tracing;
let db: TestDb;
let stack: TestStack;
beforeAll(async () => {
  collector = await startCollector();
  // The provider is the process's, as start.ts makes it for a role: here one for the whole stack.
  tracing = startTracing({ serviceName: 'stampcard-test', endpoint: collector.url });
  db = await createTestDb();
  stack = await createTestStack(db, { http: true, dispatcher: true, otlpEndpoint: collector.url });
});
afterAll(async () => {
  await stack?.close();
  await tracing?.shutdown();
  collector?.close();
  await db?.drop();
});
const receiver = useReceivers();

describe('a trace follows one action from its request to each delivery attempt', () => {
  it('request → apply → fan-out → delivery, one trace, each span the child of the one before, and the receiver asked for it gets it', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 1, isUnlimited: true } });
    const traced = await receiver();
    const plain = await receiver();
    await registerEndpoint(stack, w.campaign.id, {
      url: traced.url,
      eventTypes: ['LOYALTY_ACTION_APPLIED'],
      traceContext: true,
    });
    await registerEndpoint(stack, w.campaign.id, { url: plain.url, eventTypes: ['LOYALTY_ACTION_APPLIED'] });
    // The caller's own trace: the request continues it.
    const traceId = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    const caller = `00-${traceId}-1122334455667788-01`;
    const res = await client(overHttp(stack.baseUrl!), w.key).post(
      `/v1/campaign/${w.campaign.id}/loyalty-action`,
      { participantEmail: uniqueEmail('traced'), rewardId: w.reward.id },
      { traceparent: caller },
    );
    expect(res.status).toBe(200);
    await traced.waitFor(1);
    await plain.waitFor(1);

    // The endpoint that asked gets the trace of its delivery; the other gets no traceparent.
    const header = traced.received[0]!.headers.traceparent as string;
    expect(header).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(plain.received[0]!.headers.traceparent).toBeUndefined();

    const spans = await eventually(
      async () => collector.spans.filter((s) => s.traceId === traceId),
      (list) => list.filter((s) => s.name === 'deliver webhook').length >= 2,
      15_000,
    );
    const byName = (name: string) => spans.filter((s) => s.name === name);
    const [request] = byName('POST /v1/campaign/:id/loyalty-action');
    const [apply] = byName('apply loyalty action');
    // Three events: NEW_PARTICIPANT_ADDED, recorded by the request itself; LOYALTY_ACTION_APPLIED and
    // PARTICIPANT_REACHED_A_GOAL, by the apply.
    const fanOuts = byName('fan out event');
    const deliveries = byName('deliver webhook');
    expect(request, spans.map((s) => s.name).join(', ')).toBeDefined();
    expect(request!.parentSpanId).toBe('1122334455667788');
    expect(apply!.parentSpanId).toBe(request!.spanId);
    expect(fanOuts.map((s) => s.parentSpanId).sort()).toEqual(
      [apply!.spanId, apply!.spanId, request!.spanId].sort(),
    );
    // Both endpoints take LOYALTY_ACTION_APPLIED only: both deliveries are children of its fan-out.
    expect(deliveries).toHaveLength(2);
    const parent = fanOuts.find((s) => s.spanId === deliveries[0]!.parentSpanId);
    expect(parent?.parentSpanId).toBe(apply!.spanId);
    expect(deliveries[1]!.parentSpanId).toBe(parent!.spanId);
    // The receiver's traceparent names its delivery's span.
    expect(deliveries.map((d) => d.spanId)).toContain(header.split('-')[2]);
    const attr = (s: OtlpSpan, key: string) => s.attributes.find((a) => a.key === key)?.value;
    expect(attr(request!, 'http.response.status_code')?.intValue).toBe(200);
    expect(attr(apply!, 'stampcard.loyalty_action.id')?.stringValue).toBe(res.body.action.id);
  });
});
