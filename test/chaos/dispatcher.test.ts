import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { chaosProgram, load, report, sleep, until, useChaosStack } from './support';

/**
 * Scenario 4: the dispatcher killed with SIGKILL every few seconds while it delivers, to healthy receivers
 * (one fast, one slow, one that trickles its answer, one that answers a huge body) and to hostile ones (one
 * that never answers, one that resets the connection, one that answers bytes that are not HTTP). Every event
 * reaches every healthy endpoint at least once with a stable id, none after its success was recorded, and no
 * message is tried past its schedule; duplicates (a delivery sent, then the dispatcher killed before it
 * recorded it) are counted, by endpoint. The hostile endpoints hear only of new participants (a dozen events): a
 * receiver that hangs is soon called one message at a time, so its schedule ends are seen within the run.
 */
const SCHEDULE = [200, 500, 1000];
const PARTICIPANTS = 12;
const stack = useChaosStack({
  env: {
    WEBHOOK_RETRY_SCHEDULE: SCHEDULE.join(','),
    WEBHOOK_TIMEOUT_MS: '1000',
  },
});

type Receiver = {
  name: string;
  healthy: boolean;
  url: string;
  got: { id: string; at: number }[];
  server: Server;
};
const receivers: Receiver[] = [];
const sockets = new Set<Socket>();
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all(receivers.map((r) => new Promise((resolve) => r.server.close(resolve))));
});

/** A receiver on a local port that records each request's `webhook-id`, then answers as `answer` does. */
async function receiver(
  name: string,
  healthy: boolean,
  answer: (res: import('node:http').ServerResponse, socket: Socket) => void,
): Promise<Receiver> {
  const got: Receiver['got'] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got.push({ id: String(req.headers['webhook-id']), at: Date.now() });
      answer(res, req.socket);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const r = {
    name,
    healthy,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/${name}`,
    got,
    server,
  };
  receivers.push(r);
  return r;
}

const HUGE = Buffer.alloc(8 * 1024 * 1024, 'x');

describe('chaos: dispatcher kill -9 mid-delivery, hostile receivers', () => {
  it('delivers every event to every healthy endpoint at least once, never after success, never past the schedule', async () => {
    await stack.start('api');
    await stack.start('worker');
    await stack.start('dispatcher');
    await receiver('fast', true, (res) => res.end('ok'));
    await receiver('slow', true, (res) => void setTimeout(() => res.end('ok'), Math.random() * 300));
    await receiver('trickle', true, (res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      let n = 0;
      const drip = setInterval(() => {
        if (res.destroyed || n++ > 20) {
          clearInterval(drip);
          res.end();
        } else res.write('.');
      }, 200);
    });
    await receiver('huge', true, (res) => res.end(HUGE));
    await receiver('hang', false, () => {});
    await receiver('reset', false, (_res, socket) => socket.destroy());
    await receiver('garbage', false, (_res, socket) => socket.end('NOT HTTP AT ALL\r\n\r\n'));

    const p = await chaosProgram(stack, { conversionsRequired: 1000 });
    const endpoints = new Map<string, Receiver>();
    for (const r of receivers) {
      const made = await p.op.post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, {
        url: r.url,
        // The hostile ones hear of each new participant only: a receiver that hangs is called one message at a
        // time (its window narrows to one), so its messages are kept few enough to see every schedule end.
        eventTypes: r.healthy
          ? ['LOYALTY_ACTION_APPLIED', 'NEW_PARTICIPANT_ADDED']
          : ['NEW_PARTICIPANT_ADDED'],
      });
      expect(made.status).toBe(200);
      endpoints.set(made.body.id, r);
    }
    let kills = 0;
    let lastRestart = performance.now();
    const result = await load(stack, p, {
      total: 600,
      concurrency: 4,
      participants: PARTICIPANTS,
      pauseMs: 50,
      during: async (progress) => {
        while (progress() < 1) {
          await sleep(1000);
          for (const d of stack.running('dispatcher')) await stack.kill(d);
          kills++;
          await stack.start('dispatcher');
          lastRestart = performance.now();
        }
      },
    });
    // Every message settled: the healthy endpoints' delivered (the recovery, from the last restart), then the
    // hostile ones' given up after their schedule.
    const healthyIds = [...endpoints].filter(([, r]) => r.healthy).map(([id]) => id);
    const settled = async (ids: string[], expected: number) => {
      const [m] = await stack.sql<{ open: number; total: number }[]>`
        select count(*) filter (where status = 'PENDING')::int as open, count(*)::int as total
        from webhook_messages where endpoint_id = any(${ids})`;
      return m!.open === 0 && m!.total === expected;
    };
    await until(
      () => settled(healthyIds, healthyIds.length * (result.accepted.length + PARTICIPANTS)),
      120_000,
      'every message to a healthy endpoint delivered',
    );
    const recoveryMs = Math.round(performance.now() - lastRestart);
    const settledMs = await until(
      () =>
        settled(
          [...endpoints.keys()],
          healthyIds.length * result.accepted.length + endpoints.size * PARTICIPANTS,
        ),
      180_000,
      'every message to a hostile endpoint given up',
    );
    const rows = await stack.sql<
      { id: string; endpoint_id: string; status: string; attempts: number; succeeded_at: Date | null }[]
    >`select id, endpoint_id, status, attempts, succeeded_at from webhook_messages where campaign_id = ${p.campaignId}`;
    const figures: Record<string, unknown> = {
      accepted: result.accepted.length,
      kills,
      recoveryMs,
      settledMs,
    };
    let duplicates = 0;
    let afterSuccess = 0;
    for (const [endpointId, r] of endpoints) {
      const mine = rows.filter((m) => m.endpoint_id === endpointId);
      const received = new Map<string, number[]>();
      for (const g of r.got) received.set(g.id, [...(received.get(g.id) ?? []), g.at]);
      if (r.healthy) {
        expect(
          mine.every((m) => m.status === 'SUCCEEDED'),
          r.name,
        ).toBe(true);
        expect(
          mine.filter((m) => !received.has(m.id)),
          r.name,
        ).toEqual([]);
        let mineDuplicates = 0;
        for (const m of mine) {
          const times = received.get(m.id)!;
          mineDuplicates += times.length - 1;
          // A delivery that starts after the success was recorded (a second past it, for clocks and transit).
          afterSuccess += times.filter((t) => t > m.succeeded_at!.getTime() + 1000).length;
        }
        duplicates += mineDuplicates;
        figures[r.name] = `${received.size}/${mine.length} (${mineDuplicates} twice)`;
      } else {
        expect(
          mine.every((m) => m.status === 'FAILED'),
          r.name,
        ).toBe(true);
        const maxAttempts = Math.max(...mine.map((m) => m.attempts));
        figures[r.name] = `failed ${mine.length}, attempts max ${maxAttempts}`;
        // One attempt and one per delay of the schedule, never more; a kill may cost an attempt's record.
        expect(maxAttempts, r.name).toBeLessThanOrEqual(1 + SCHEDULE.length);
        const counts = [...received.values()].map((t) => t.length);
        expect(Math.max(...counts), `${r.name}: requests per message`).toBeLessThanOrEqual(
          1 + SCHEDULE.length + kills,
        );
      }
    }
    report('dispatcher', { ...figures, duplicates, afterSuccess, answers: result.answers });
    expect(kills).toBeGreaterThanOrEqual(2);
    expect(afterSuccess).toBe(0);
  }, 300_000);
});
