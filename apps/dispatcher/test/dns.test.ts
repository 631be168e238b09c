import dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { createTestDb, type TestDb } from '../../../test/support/db';
import { type Receiver, startReceiver } from '../../../test/support/receiver';
import { createTestStack, type TestStack } from '../../../test/support/stack';
import { goalWorld, messagesOf, registerEndpoint } from '../../../test/support/webhooks';

/**
 * Destination look-ups whose DNS never answers. The dispatcher resolves with a DNS server of the test's own
 * (`WEBHOOK_DNS_SERVERS`) that reads every query and answers none, so no query leaves this host.
 */
const dns = dgram.createSocket('udp4');
const asked = new Set<string>();
dns.on('message', (msg) => {
  const labels: string[] = [];
  for (let i = 12; i < msg.length && msg[i]! > 0; i += msg[i]! + 1) {
    labels.push(msg.subarray(i + 1, i + 1 + msg[i]!).toString());
  }
  asked.add(labels.join('.'));
});

let db: TestDb;
let stack: TestStack;
let rx: Receiver;
beforeAll(async () => {
  await new Promise<void>((resolve) => dns.bind(0, '127.0.0.1', resolve));
  db = await createTestDb();
  stack = await createTestStack(db, {
    dispatcher: true,
    sweep: true,
    // localhost is a local receiver; the silent names would be refused for no other reason than DNS.
    allowPrivateNetworks: true,
    dnsServers: `127.0.0.1:${dns.address().port}`,
    dnsTimeoutMs: 6000,
    // Longer than the look-up's bound, so that the attempt ends at the look-up's bound, not the delivery's.
    webhookTimeoutMs: 15_000,
    retrySchedule: '50',
  });
  rx = await startReceiver();
});
afterAll(async () => {
  await rx?.close();
  await stack?.close();
  await db?.drop();
  dns.close();
});

describe('destinations whose DNS never answers', () => {
  it("do not hold another endpoint's delivery, and each attempt fails at its bound as a DNS error", async () => {
    const w = await goalWorld(stack);
    const silent = [];
    for (let i = 0; i < 6; i++) {
      silent.push(
        await registerEndpoint(stack, w.campaign.id, {
          url: `http://silent-${i}.stampcard.test/hooks`,
          eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
        }),
      );
    }
    await w.act();
    await w.act();
    // Twelve deliveries are now waiting on DNS: with dns.lookup, four would hold libuv's whole thread pool.
    await eventually(
      async () => asked.size,
      (n) => n === 6,
    );
    // Another tenant's endpoint: its events go to it alone, so no silent delivery competes for its slot.
    const other = await goalWorld(stack);
    const live = await registerEndpoint(stack, other.campaign.id, {
      url: `http://localhost:${rx.port}/hooks`,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await other.act();
    await rx.waitFor(1);
    const [delivered] = await eventually(
      () => messagesOf(stack, live.id),
      (ms) => ms[0]?.status === 'SUCCEEDED',
    );
    expect(delivered.attemptLog.map((a: any) => a.statusCode)).toEqual([200]);
    // Each silent attempt ends at the look-up's bound, a failed DNS attempt, retried once, dead-lettered.
    for (const ep of silent) {
      const ms = await eventually(
        () => messagesOf(stack, ep.id),
        (list) => list.length === 2 && list.every((m) => m.status === 'FAILED'),
        40_000,
      );
      for (const m of ms) {
        expect(m.attemptLog.map((a: any) => [a.statusCode, a.errorClass])).toEqual([
          [null, 'DNS'],
          [null, 'DNS'],
        ]);
        // Every silent look-up was still waiting for DNS when the other endpoint got its delivery.
        const [first] = m.attemptLog;
        expect(first.attemptedAt + first.latencyMs).toBeGreaterThan(delivered.succeededAt);
      }
    }
    expect(rx.received).toHaveLength(1);
  }, 90_000);
});
