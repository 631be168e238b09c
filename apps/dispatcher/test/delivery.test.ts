import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { uniqueEmail } from '../../../test/support/factories';
import { useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, operator, registerEndpoint } from '../../../test/support/webhooks';

const stack = useTestStack({
  dispatcher: true,
  sweep: true,
  retrySchedule: '50,100,200',
  webhookTimeoutMs: 1000,
});

const receiver = useReceivers();

describe('delivery', () => {
  it('delivers each event signed: standardwebhooks verifies it, and the goal carries the whole Reward', async () => {
    const rx = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
    expect(ep.secret).toMatch(/^whsec_/);
    await w.act();
    const got = await rx.waitFor(3);
    const types = got.map((r) => r.json.type).sort();
    expect(types).toEqual(['LOYALTY_ACTION_APPLIED', 'NEW_PARTICIPANT_ADDED', 'PARTICIPANT_REACHED_A_GOAL']);
    const wh = new Webhook(ep.secret);
    for (const r of got) {
      const verified = wh.verify(r.body, r.headers as Record<string, string>) as any;
      expect(verified).toEqual(r.json);
      expect(Object.keys(r.json).sort()).toEqual(['data', 'timestamp', 'type']);
      expect(r.headers['webhook-id']).toMatch(/^msg_/);
      expect(r.headers['stampcard-event-id']).toMatch(/^evt_/);
      expect(r.headers['content-type']).toBe('application/json');
    }
    const goal = got.find((r) => r.json.type === 'PARTICIPANT_REACHED_A_GOAL')!.json;
    expect(goal.data.reward).toMatchObject({ rewardId: w.reward.id, title: w.reward.title, approved: true });
    const messages = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms.length === 3 && ms.every((m) => m.status === 'SUCCEEDED'),
    );
    for (const m of messages) {
      expect(m.attemptLog).toHaveLength(1);
      expect(m.attemptLog[0]).toMatchObject({ statusCode: 200, succeeded: true, responseExcerpt: 'ok' });
    }
  });

  it('numbers a participant’s messages 1, 2, 3… in `webhook-sequence`, as its messages show; a test message has none', async () => {
    const rx = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
    const email = uniqueEmail();
    await w.act(email);
    await w.act(email);
    await w.act(email);
    await w.act(); // someone else: numbered apart
    const test = await operator(stack).post(`/admin/v1/webhook-endpoints/${ep.id}/test`, {});
    expect(test.status, JSON.stringify(test.body)).toBeLessThan(300);
    const got = await rx.waitFor(11);
    const sent = new Map(got.map((r) => [r.headers['webhook-id'], r.headers['webhook-sequence']]));
    const messages = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms.length === 11 && ms.every((m) => m.status === 'SUCCEEDED'),
    );
    const byParticipant = new Map<string, number[]>();
    for (const m of messages)
      if (m.participantId)
        byParticipant.set(m.participantId, [...(byParticipant.get(m.participantId) ?? []), m.sequence]);
    const numbers = [...byParticipant.values()]
      .map((ns) => ns.sort((a, b) => a - b))
      .sort((a, b) => b.length - a.length);
    expect(numbers).toEqual([
      [1, 2, 3, 4, 5, 6, 7],
      [1, 2, 3],
    ]);
    for (const m of messages) if (m.sequence !== null) expect(sent.get(m.id)).toBe(String(m.sequence));
    const testMessage = messages.find((m) => m.eventType === 'WEBHOOK_TEST');
    expect(testMessage).toMatchObject({ participantId: null, sequence: null });
    expect(sent.get(testMessage.id)).toBeUndefined();
  });

  it('an endpoint gets only the event types it asked for', async () => {
    const rx = await receiver();
    const w = await goalWorld(stack);
    await registerEndpoint(stack, w.campaign.id, { url: rx.url, eventTypes: ['PARTICIPANT_REACHED_A_GOAL'] });
    await w.act();
    await w.act();
    const got = await rx.waitFor(2);
    await new Promise((r) => setTimeout(r, 300));
    expect(got.map((r) => r.json.type)).toEqual(['PARTICIPANT_REACHED_A_GOAL', 'PARTICIPANT_REACHED_A_GOAL']);
  });

  it('a 500 is retried with the same webhook-id until a 200', async () => {
    const rx = await receiver((_r, n) => (n < 2 ? { status: 500, body: 'boom' } : {}));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await w.act();
    const got = await rx.waitFor(3);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const [m] = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'SUCCEEDED',
    );
    expect(m.attempts).toBe(3);
    expect(m.attemptLog.map((a: any) => [a.statusCode, a.errorClass, a.responseExcerpt])).toEqual([
      [500, 'HTTP_STATUS', 'boom'],
      [500, 'HTTP_STATUS', 'boom'],
      [200, null, 'ok'],
    ]);
  });

  it('a receiver slower than WEBHOOK_TIMEOUT_MS is timed out, and the retry delivers', async () => {
    const rx = await receiver((_r, n) => (n === 0 ? { delayMs: 1500 } : {}));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await w.act();
    await rx.waitFor(2);
    const [m] = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'SUCCEEDED',
    );
    expect(m.attemptLog.map((a: any) => [a.statusCode, a.errorClass])).toEqual([
      [null, 'TIMEOUT'],
      [200, null],
    ]);
    expect(m.attemptLog[0].latencyMs).toBeGreaterThanOrEqual(900);
    expect(m.attemptLog[0].latencyMs).toBeLessThan(1500);
  });

  it('a redirect is not followed: a 3xx is a failed attempt, and the target never hears of it', async () => {
    const target = await receiver();
    const rx = await receiver(() => ({ status: 307, headers: { location: target.url } }));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await w.act();
    const [m] = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'FAILED',
    );
    expect(m.attempts).toBe(4);
    expect(m.attemptLog.every((a: any) => a.statusCode === 307 && !a.succeeded)).toBe(true);
    expect(target.received).toHaveLength(0);
  });

  it('when every attempt of the schedule fails the message is dead-lettered, and replay delivers it with the same id', async () => {
    let healthy = false;
    const rx = await receiver(() => (healthy ? {} : { status: 502 }));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await w.act();
    const [dead] = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'FAILED',
    );
    // Once plus once per entry of the schedule (50,100,200): four attempts, then nothing more.
    expect(dead.attempts).toBe(4);
    expect(dead.nextAttemptAt).toBeNull();
    expect(dead.lastError).toBe('HTTP 502');
    await new Promise((r) => setTimeout(r, 400));
    expect(rx.received).toHaveLength(4);
    const failed = await stack.deps.queues.forJob('webhook-message.deliver').getFailed();
    expect(failed.some((j) => j.data.messageId === dead.id)).toBe(true);

    healthy = true;
    const replay = await operator(stack).post(`/admin/v1/webhook-messages/${dead.id}/replay`);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ id: dead.id, status: 'PENDING', attempts: 0 });
    await rx.waitFor(5);
    expect(rx.received[4]!.headers['webhook-id']).toBe(dead.id);
    const [done] = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'SUCCEEDED',
    );
    expect(done.attemptLog).toHaveLength(5);
  });

  it('429 with Retry-After holds the endpoint for that long, and the throttled attempt does not count', async () => {
    const rx = await receiver((_r, n) => (n === 0 ? { status: 429, headers: { 'retry-after': '1' } } : {}));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await w.act();
    const got = await rx.waitFor(2);
    // The schedule's first retry is 50 ms away; the receiver asked for a second.
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(950);
    const [m] = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'SUCCEEDED',
    );
    expect(m.attempts).toBe(1);
    expect(m.attemptLog.map((a: any) => [a.statusCode, a.throttled])).toEqual([
      [429, true],
      [200, false],
    ]);
  });

  it('503 without Retry-After is an ordinary failure on the schedule', async () => {
    const rx = await receiver((_r, n) => (n === 0 ? { status: 503 } : {}));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await w.act();
    const got = await rx.waitFor(2);
    expect(got[1]!.at - got[0]!.at).toBeLessThan(900);
    const [m] = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'SUCCEEDED',
    );
    expect(m.attemptLog.map((a: any) => [a.statusCode, a.throttled])).toEqual([
      [503, false],
      [200, false],
    ]);
  });

  it('keeps at most 4 KiB of an answer', async () => {
    const rx = await receiver(() => ({ body: 'x'.repeat(100_000) }));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await w.act();
    const [m] = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'SUCCEEDED',
    );
    expect(m.attemptLog[0].responseExcerpt).toBe('x'.repeat(4096));
  });

  it('takes the status of an answer whose body trickles on, with what came of it by then', async () => {
    // 200 and "ok" at once, then a byte a second that never ends: the delivery's slot is held half its timeout
    // at most, not until the timeout, and the excerpt is what came (a read cut by the timeout would keep none).
    const sockets = new Set<import('node:net').Socket>();
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('ok');
      const drip = setInterval(() => res.write('.'), 1000);
      res.on('close', () => clearInterval(drip));
    });
    server.on('connection', (s) => sockets.add(s));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const w = await goalWorld(stack);
      const ep = await registerEndpoint(stack, w.campaign.id, {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/trickle`,
        eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
      });
      await w.act();
      const [m] = await eventually(
        () => messagesOf(stack, ep.id),
        (ms) => ms[0]?.status === 'SUCCEEDED',
      );
      expect(m.attemptLog).toHaveLength(1);
      expect(m.attemptLog[0]).toMatchObject({ statusCode: 200, succeeded: true, responseExcerpt: 'ok' });
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    }
  });

  it('records an answer PostgreSQL could not store as text (NUL bytes) with them replaced', async () => {
    const rx = await receiver(() => ({ body: 'ok\u0000\u0000done' }));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await w.act();
    const [m] = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'SUCCEEDED',
    );
    expect(m.attemptLog).toHaveLength(1);
    expect(m.attemptLog[0].responseExcerpt).toBe('ok\ufffd\ufffddone');
    expect(rx.received).toHaveLength(1);
  });
});
