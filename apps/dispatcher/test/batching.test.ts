import { createLogger } from '@stampcard/config';
import {
  type Ctx,
  claimStatement,
  type Delivery,
  fanOutEvents,
  loadDeliveries,
  newId,
  recordAttempt,
  recordEvents,
  systemClock,
} from '@stampcard/core';
import { events, webhookAttempts, webhookEndpoints, webhookMessages } from '@stampcard/db';
import { eq, inArray, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { makeWorld } from '../../../test/support/factories';
import { useTestDb } from '../../../test/support/use';
import { createDeliveryBatching } from '../src/batching';
import { attemptDelivery, type DeliverDeps } from '../src/processors/attempt';
import { loadAndClaim } from '../src/processors/deliver-batch';
import { createInFlight } from '../src/throttle';

const testDb = useTestDb();
const silent = createLogger({ level: 'silent', name: 'batching-test' });

/** An endpoint of a fresh campaign with `n` PENDING test messages. */
async function endpointWithMessages(ctx: Ctx, n: number) {
  const w = await makeWorld(ctx);
  const now = new Date();
  const endpointId = newId('webhookEndpoint');
  await ctx.db.insert(webhookEndpoints).values({
    id: endpointId,
    accountId: w.account.id,
    campaignId: w.campaign.id,
    url: 'http://127.0.0.1:9/hook',
    kind: 'NOTIFY',
    secret: `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`,
    createdAt: now,
    updatedAt: now,
  });
  const ids = Array.from({ length: n }, () => newId('webhookMessage'));
  if (n === 0) return { endpointId, ids };
  await ctx.db.insert(webhookMessages).values(
    ids.map((id, i) => ({
      id,
      endpointId,
      campaignId: w.campaign.id,
      eventType: 'TEST',
      testBody: { type: 'TEST', n: i },
      status: 'PENDING' as const,
      nextAttemptAt: now,
      createdAt: now,
      updatedAt: now,
      eventAt: MADE_AT,
    })),
  );
  return { endpointId, ids };
}

/** Delivery batching on a pool that is closed: every statement fails, as with a PostgreSQL that is away. */
async function batchingWithPostgresAway() {
  const closed = postgres(testDb.url, { max: 1, onnotice: () => {} });
  await closed.end();
  return createDeliveryBatching(
    { db: drizzle(closed) as unknown as Ctx['db'], clock: systemClock },
    { leaseMs: 30_000 },
  );
}

/** When the test's messages were made: their partition key. */
const MADE_AT = new Date();

const success = (messageId: string, endpointId: string) => ({
  id: newId('delivery'),
  messageId,
  generation: 0,
  eventAt: MADE_AT,
  endpointId,
  attemptedAt: new Date(),
  statusCode: 204,
  latencyMs: 3,
  responseExcerpt: null,
});

/** Records a 500 for a loaded message: a failed attempt, retried on a one-step schedule. */
const failAttempt = (ctx: Ctx, delivery: Delivery) =>
  recordAttempt(
    ctx,
    delivery,
    {
      attemptedAt: new Date(),
      statusCode: 500,
      latencyMs: 4,
      responseExcerpt: 'no',
      errorClass: null,
      retryAfter: null,
    },
    {
      schedule: [1000],
      disableAfterMs: 5 * 86_400_000,
      throttle: { floorMs: 1000, freeThrottles: 10 },
      random: 0.5,
    },
  );

describe('delivery batching', () => {
  it('jobs starting together share one read, each getting its own message or why not', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { endpointId, ids } = await endpointWithMessages(ctx, 40);
    const batching = createDeliveryBatching(ctx, { leaseMs: 30_000 });
    const loaded = await Promise.all([
      ...ids.map((messageId) => batching.load({ messageId, generation: 0 })),
      batching.load({ messageId: ids[0]!, generation: 1 }),
      batching.load({ messageId: 'msg_missing', generation: 0 }),
    ]);
    expect(loaded.slice(0, 40).map((d) => ('skip' in d ? d.skip : JSON.parse(d.body).n))).toEqual(
      ids.map((_, i) => i),
    );
    expect(loaded.slice(40)).toEqual([{ skip: 'STALE' }, { skip: 'GONE' }]);
    expect(loaded.slice(0, 40).every((d) => 'endpoint' in d && d.endpoint.id === endpointId)).toBe(true);
    expect(await loadDeliveries(ctx, [])).toEqual([]);
  });

  it('successes finishing together are written at once; one whose message is gone fails alone', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { endpointId, ids } = await endpointWithMessages(ctx, 30);
    const [gone, ...kept] = ids;
    await ctx.db.delete(webhookMessages).where(eq(webhookMessages.id, gone!));
    const batching = createDeliveryBatching(ctx, { leaseMs: 30_000 });
    const results = await Promise.allSettled(
      [gone!, ...kept].map((id) => batching.writeSuccess(success(id, endpointId))),
    );
    expect(results[0]!.status).toBe('fulfilled'); // nothing to record: no attempt for a message that is gone
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
    const rows = await ctx.db
      .select({ id: webhookMessages.id, status: webhookMessages.status, attempts: webhookMessages.attempts })
      .from(webhookMessages)
      .where(eq(webhookMessages.endpointId, endpointId));
    expect(rows).toHaveLength(29);
    expect(rows.every((r) => r.status === 'SUCCEEDED' && r.attempts === 1)).toBe(true);
    const attempts = await ctx.db
      .select()
      .from(webhookAttempts)
      .where(eq(webhookAttempts.endpointId, endpointId));
    expect(attempts.map((a) => a.messageId).sort()).toEqual([...kept].sort());
    expect(attempts.every((a) => a.succeeded && a.statusCode === 204 && a.errorClass === null)).toBe(true);

    // A second success for a message already SUCCEEDED records the attempt and changes nothing else.
    await batching.writeSuccess(success(kept[0]!, endpointId));
    const [again] = await ctx.db
      .select({ attempts: webhookMessages.attempts })
      .from(webhookMessages)
      .where(eq(webhookMessages.id, kept[0]!));
    expect(again!.attempts).toBe(1);
  });
  it('successes that come back while a write of them is in flight wait for it, and go together in the next', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { endpointId, ids } = await endpointWithMessages(ctx, 21);
    const [first, ...rest] = ids as [string, ...string[]];
    // The statements the batching sends, counted on a connection of its own.
    let writes = 0;
    const counted = postgres(testDb.url, {
      max: 4,
      onnotice: () => {},
      debug: (_c, query) => {
        if (query.includes('with input as')) writes += 1;
      },
    });
    // The first success's write waits for a row lock held meanwhile: it stays in flight while the others come.
    const holder = postgres(testDb.url, { max: 1, onnotice: () => {} });
    let release = () => {};
    try {
      const batching = createDeliveryBatching(
        { db: drizzle(counted) as unknown as Ctx['db'], clock: systemClock },
        { leaseMs: 30_000 },
      );
      const held = new Promise<void>((r) => {
        release = r;
      });
      const locking = holder.begin(async (tx) => {
        await tx`select id from webhook_messages where id = ${first} for update`;
        await held;
      });
      await new Promise((r) => setTimeout(r, 50));
      const written = [batching.writeSuccess(success(first, endpointId))];
      // The rest come back in five groups, a few ms apart, while that write waits.
      for (let g = 0; g < 5; g += 1) {
        await new Promise((r) => setTimeout(r, 5));
        for (const id of rest.slice(g * 4, g * 4 + 4))
          written.push(batching.writeSuccess(success(id, endpointId)));
      }
      expect(writes).toBe(1);
      release();
      await locking;
      await Promise.all(written);
      expect(writes).toBe(2);
      const done = await ctx.db
        .select({ status: webhookMessages.status })
        .from(webhookMessages)
        .where(eq(webhookMessages.endpointId, endpointId));
      expect(done.filter((r) => r.status === 'SUCCEEDED')).toHaveLength(21);
    } finally {
      release();
      await Promise.all([counted.end({ timeout: 5 }), holder.end({ timeout: 5 })]);
    }
  });
  it('a message is claimed by one delivery at a time: not again while the claim holds, nor once it succeeded; a failed attempt or an expired claim frees it', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { endpointId, ids } = await endpointWithMessages(ctx, 4);
    const [a, b, c, d] = ids as [string, string, string, string];
    const claim = (messageId: string, generation = 0) => ({ messageId, generation, eventAt: MADE_AT });
    const batching = createDeliveryBatching(ctx, { leaseMs: 30_000 });
    // Two deliveries of one message about to send together (one statement): only one may send it.
    const together = await Promise.all([batching.claim(claim(a)), batching.claim(claim(a))]);
    expect(together.sort()).toEqual([false, true]);
    // Held by that claim, whoever asks later; of another generation (replayed since), never.
    expect(await batching.claim(claim(a))).toBe(false);
    expect(await batching.claim(claim(b, 1))).toBe(false);
    expect(await batching.claim(claim(b))).toBe(true);
    // A success ends it for good, and clears the claim: replayed (its next generation), it is claimed at once.
    await batching.writeSuccess(success(b, endpointId));
    expect(await batching.claim(claim(b))).toBe(false);
    await ctx.db.execute(
      sql`update ${webhookMessages} set status = 'PENDING', generation = 1 where id = ${b}`,
    );
    expect(await batching.claim(claim(b, 1))).toBe(true);
    // A failed attempt's record frees it for the retry.
    expect(await batching.claim(claim(c))).toBe(true);
    const [loaded] = await loadDeliveries(ctx, [{ messageId: c, generation: 0 }]);
    if (!loaded || 'skip' in loaded) throw new Error('not loaded');
    await failAttempt(ctx, loaded);
    expect(await batching.claim(claim(c))).toBe(true);
    // A claim whose holder died (never recorded) expires after its lease.
    const short = createDeliveryBatching(ctx, { leaseMs: 200 });
    expect(await short.claim(claim(d))).toBe(true);
    expect(await short.claim(claim(d))).toBe(false);
    await new Promise((r) => setTimeout(r, 300));
    expect(await short.claim(claim(d))).toBe(true);
  });

  it("a claim's commit does not wait for the disk, and only its own transaction is told so", async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { ids } = await endpointWithMessages(ctx, 2);
    const [a, b] = ids as [string, string];
    const claim = (messageId: string) => [{ messageId, generation: 0, eventAt: MADE_AT }];
    // One session of its own, to read what the claim leaves in it.
    const connection = postgres(testDb.url, { max: 1, onnotice: () => {} });
    try {
      const claimOf = (messageId: string) => {
        const { statement, values } = claimStatement(claim(messageId), 30_000);
        return connection.unsafe(statement.text, statement.params(values));
      };
      // Inside a transaction: its commit is the claim's, and goes without waiting for its WAL's flush.
      await connection.unsafe('begin');
      expect(await claimOf(a)).toHaveLength(1);
      const [inside] = await connection.unsafe("select current_setting('synchronous_commit') as s");
      await connection.unsafe('commit');
      expect(inside?.s).toBe('off');
      // On its own, as the dispatcher sends it: the connection's next statement (an attempt's record) waits.
      expect(await claimOf(b)).toHaveLength(1);
      const [after] = await connection.unsafe("select current_setting('synchronous_commit') as s");
      expect(after?.s).toBe('on');
    } finally {
      await connection.end();
    }
    // Seen by every other session at once: neither message can be claimed again while its claim holds.
    const batching = createDeliveryBatching(ctx, { leaseMs: 30_000 });
    expect(await Promise.all([a, b].map((id) => batching.claim(claim(id)[0]!)))).toEqual([false, false]);
  });

  it('a message claimed ahead with its batch that steps aside before its request ends its claim, so its next job takes it at once', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { ids } = await endpointWithMessages(ctx, 2);
    const [a, b] = ids as [string, string];
    const claim = (messageId: string) => ({ messageId, generation: 0, eventAt: MADE_AT });
    const batching = createDeliveryBatching(ctx, { leaseMs: 30_000 });
    const deliveries = await loadDeliveries(ctx, [
      { messageId: a, generation: 0 },
      { messageId: b, generation: 0 },
    ]);
    const [first, second] = deliveries.map((d) => {
      if ('skip' in d) throw new Error('not loaded');
      return d;
    }) as [Delivery, Delivery];
    // The endpoint's only slot is taken: both deliveries find its window full, and step aside.
    const inFlight = createInFlight(1);
    expect(await inFlight.acquire(first.endpoint.id, 0)).toBe(true);
    // Nothing past the window is reached: no request, gate, queue or record.
    const deps = { ctx, inFlight, batching } as unknown as DeliverDeps;
    expect(await Promise.all([batching.claim(claim(a)), batching.claim(claim(b))])).toEqual([true, true]);
    expect(await attemptDelivery(deps, first, 10, true)).toHaveProperty('later');
    expect(await attemptDelivery(deps, second, 10, false)).toHaveProperty('later');
    // Claimed ahead, its claim is ended; the other's claim (not the attempt's to end) holds.
    expect(await batching.claim(claim(a))).toBe(true);
    expect(await batching.claim(claim(b))).toBe(false);
  });

  it('a claimed-ahead message steps aside even when its claim cannot be ended (PostgreSQL away): the claim is left to its lease', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { ids } = await endpointWithMessages(ctx, 1);
    const claim = { messageId: ids[0]!, generation: 0, eventAt: MADE_AT };
    const batching = createDeliveryBatching(ctx, { leaseMs: 30_000 });
    const [delivery] = await loadDeliveries(ctx, [{ messageId: ids[0]!, generation: 0 }]);
    if (!delivery || 'skip' in delivery) throw new Error('not loaded');
    // Releases go through a pool that is closed: each one fails as a store that is away does.
    const away = await batchingWithPostgresAway();
    await expect(away.release(claim)).rejects.toThrow();
    const inFlight = createInFlight(1);
    expect(await inFlight.acquire(delivery.endpoint.id, 0)).toBe(true);
    const deps = {
      ctx,
      inFlight,
      batching: { ...batching, release: away.release },
    } as unknown as DeliverDeps;
    expect(await batching.claim(claim)).toBe(true);
    expect(await attemptDelivery(deps, delivery, 10, true)).toHaveProperty('later');
    // Not ended: no other delivery takes the message until the lease is over.
    expect(await batching.claim(claim)).toBe(false);
  });

  it('a batch is loaded and claimed in one statement: each message it can send now, once; the rest are left to their attempts', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { ids } = await endpointWithMessages(ctx, 6);
    const [free, held, later, stale, gone, twice] = ids as [string, string, string, string, string, string];
    const claimOf = (messageId: string) => ({ messageId, generation: 0, eventAt: MADE_AT });
    const batching = createDeliveryBatching(ctx, { leaseMs: 30_000 });
    const deps = { ctx, batching, logger: silent } as unknown as DeliverDeps;
    // Held by another delivery's claim; due in an hour; its event gone (nothing to send).
    expect(await batching.claim(claimOf(held))).toBe(true);
    await ctx.db
      .update(webhookMessages)
      .set({ nextAttemptAt: new Date(Date.now() + 3_600_000) })
      .where(eq(webhookMessages.id, later));
    await ctx.db
      .update(webhookMessages)
      .set({ testBody: null, eventId: 'evt_gone' })
      .where(eq(webhookMessages.id, gone));
    const requests = [free, held, later, stale, gone, twice, twice].map((messageId) => ({
      messageId,
      generation: messageId === stale ? 1 : 0,
    }));
    const { deliveries, claimed } = await loadAndClaim(deps, requests, true);
    // A message asked for twice is claimed for its first request only.
    expect(claimed).toEqual([true, undefined, undefined, undefined, undefined, true, undefined]);
    expect(deliveries.map((d) => ('skip' in d ? d.skip : 'send'))).toEqual([
      'send',
      'send',
      'send',
      'STALE',
      'GONE',
      'send',
      'send',
    ]);
    // What it claimed is held; what it found nothing to send for was released; what was not due, not taken.
    expect(await batching.claim(claimOf(free))).toBe(false);
    expect(await batching.claim(claimOf(twice))).toBe(false);
    expect(await batching.claim(claimOf(gone))).toBe(true);
    expect(await batching.claim(claimOf(later))).toBe(true);

    // A rate-limited endpoint's batch is loaded without a claim (its turn may be far off), and so is a slow
    // endpoint's (its window narrowed: its messages soon step aside).
    const limited = await endpointWithMessages(ctx, 2);
    await ctx.db
      .update(webhookEndpoints)
      .set({ rateLimit: 10 })
      .where(eq(webhookEndpoints.id, limited.endpointId));
    const asked = limited.ids.map((messageId) => ({ messageId, generation: 0 }));
    expect((await loadAndClaim(deps, asked, true)).claimed).toEqual([undefined, undefined]);
    const slow = await endpointWithMessages(ctx, 2);
    const slowAsked = slow.ids.map((messageId) => ({ messageId, generation: 0 }));
    const loadedSlow = await loadAndClaim(deps, slowAsked, false);
    expect(loadedSlow.claimed).toEqual([]);
    expect(loadedSlow.deliveries.every((d) => !('skip' in d))).toBe(true);
    expect(await batching.claim(claimOf(slow.ids[0]!))).toBe(true);
  });

  it('a batch whose claim fails (a row locked past the lock timeout) is loaded again without it, for its attempts to claim', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { ids } = await endpointWithMessages(ctx, 2);
    const impatient = postgres(testDb.url, { max: 1, onnotice: () => {}, connection: { lock_timeout: 200 } });
    let release = () => {};
    try {
      const quick: Ctx = { db: drizzle(impatient) as unknown as Ctx['db'], clock: systemClock };
      const batching = createDeliveryBatching(quick, { leaseMs: 30_000 });
      const warned: string[] = [];
      const logger = { warn: (_o: unknown, msg: string) => warned.push(msg) };
      const deps = { ctx: quick, batching, logger } as unknown as DeliverDeps;
      const held = new Promise<void>((r) => {
        release = r;
      });
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => {
        locked = r;
      });
      const other = testDb.db.transaction(async (tx) => {
        await tx.execute(sql`select 1 from ${webhookMessages} where id = ${ids[1]!} for update`);
        locked();
        await held;
      });
      await isLocked;
      const asked = ids.map((messageId) => ({ messageId, generation: 0 }));
      const { deliveries, claimed } = await loadAndClaim(deps, asked, true);
      expect(claimed).toEqual([]);
      expect(deliveries.every((d) => !('skip' in d))).toBe(true);
      expect(warned).toEqual(['claim of a batch failed; its messages are claimed one by one']);
      release();
      await other;
      // Nothing of the failed statement stayed: both are free to claim.
      expect(
        await Promise.all(
          ids.map((id) => batching.claim({ messageId: id, generation: 0, eventAt: MADE_AT })),
        ),
      ).toEqual([true, true]);
    } finally {
      release();
      await impatient.end({ timeout: 5 });
    }
  });

  it('a claim of several messages that deadlocks is made again one message at a time, so its deliveries go on', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { ids } = await endpointWithMessages(ctx, 2);
    // The claim's statement takes its rows in the order of their ids: a first.
    const [a, b] = [...ids].sort() as [string, string];
    const claim = (messageId: string) => ({ messageId, generation: 0, eventAt: MADE_AT });
    const batching = createDeliveryBatching(ctx, { leaseMs: 30_000 });
    const waitingForLock = async () => {
      for (;;) {
        const [row] = await ctx.db.execute<{ n: number }>(
          sql`select count(*)::int as n from pg_stat_activity
              where datname = current_database() and wait_event_type = 'Lock'`,
        );
        if (row!.n > 0) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    // Another transaction holds b; the claim of [a, b] takes a and waits for b; that transaction then asks for
    // a: a cycle, which PostgreSQL breaks by failing the side that waited first, the claim.
    let holding!: () => void;
    const holds = new Promise<void>((r) => {
      holding = r;
    });
    const other = testDb.db.transaction(async (tx) => {
      await tx.execute(sql`select 1 from ${webhookMessages} where id = ${b} for update`);
      holding();
      await waitingForLock();
      await tx.execute(sql`select 1 from ${webhookMessages} where id = ${a} for update`);
    });
    await holds;
    const claims = Promise.allSettled([batching.claim(claim(a)), batching.claim(claim(b))]);
    await other;
    const answers = (await claims).map((r) => (r.status === 'fulfilled' ? r.value : `failed: ${r.reason}`));
    expect(answers).toEqual([true, true]);
  });

  it('a batch write that fails is retried one success at a time, so only the one at fault fails', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { endpointId, ids } = await endpointWithMessages(ctx, 3);
    const batching = createDeliveryBatching(ctx, { leaseMs: 30_000 });
    // One success whose status code no integer column holds: the batch's one statement fails on it.
    const results = await Promise.allSettled([
      batching.writeSuccess(success(ids[0]!, endpointId)),
      batching.writeSuccess({ ...success(ids[1]!, endpointId), statusCode: 3_000_000_000 }),
      batching.writeSuccess(success(ids[2]!, endpointId)),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    const rows = await ctx.db
      .select({ id: webhookMessages.id, status: webhookMessages.status })
      .from(webhookMessages)
      .where(eq(webhookMessages.endpointId, endpointId));
    // The two others are recorded; the one at fault is still PENDING, for a retry.
    expect(rows.find((r) => r.id === ids[1])!.status).toBe('PENDING');
    expect(rows.map((r) => r.status).sort()).toEqual(['PENDING', 'SUCCEEDED', 'SUCCEEDED']);
  });

  it('a message made before partitioning (event_at -infinity, an id without its time) loads, fails and succeeds', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { endpointId, ids } = await endpointWithMessages(ctx, 2);
    await ctx.db.execute(
      sql`update ${webhookMessages} set event_at = '-infinity' where endpoint_id = ${endpointId}`,
    );
    const batching = createDeliveryBatching(ctx, { leaseMs: 30_000 });
    const [first, second] = await Promise.all(
      ids.map((messageId) => batching.load({ messageId, generation: 0 })),
    );
    if (!first || 'skip' in first || !second || 'skip' in second) throw new Error('not loaded');
    expect(Number.isNaN(first.message.eventAt.getTime())).toBe(true);
    // Claimed (with no partition range to name), released, and claimed again at once.
    const claimOf = (d: typeof first) => ({
      messageId: d.message.id,
      generation: 0,
      eventAt: d.message.eventAt,
    });
    expect(await Promise.all([first, second].map((d) => batching.claim(claimOf(d))))).toEqual([true, true]);
    expect(await batching.claim(claimOf(first))).toBe(false);
    await batching.release(claimOf(first));
    expect(await batching.claim(claimOf(first))).toBe(true);
    // A failure is recorded in its transaction, a success in the batch statement.
    const failed = await failAttempt(ctx, first);
    expect(failed.next).toBe('RETRY');
    await batching.writeSuccess({
      ...success(second.message.id, endpointId),
      eventAt: second.message.eventAt,
    });
    const rows = await ctx.db
      .select({ id: webhookMessages.id, status: webhookMessages.status, attempts: webhookMessages.attempts })
      .from(webhookMessages)
      .where(eq(webhookMessages.endpointId, endpointId));
    expect(rows.find((r) => r.id === first.message.id)).toMatchObject({ status: 'PENDING', attempts: 1 });
    expect(rows.find((r) => r.id === second.message.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    const attempts = await ctx.db
      .select()
      .from(webhookAttempts)
      .where(eq(webhookAttempts.endpointId, endpointId));
    expect(attempts.map((a) => a.succeeded).sort()).toEqual([false, true]);
  });

  it('fan-out makes one message per wanting endpoint in one statement, and fanning out again makes none', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { endpointId } = await endpointWithMessages(ctx, 0);
    const [endpoint] = await ctx.db
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.id, endpointId));
    const picky = newId('webhookEndpoint');
    const now = new Date();
    await ctx.db.insert(webhookEndpoints).values({
      id: picky,
      accountId: endpoint!.accountId,
      campaignId: endpoint!.campaignId,
      url: 'http://127.0.0.1:9/picky',
      kind: 'NOTIFY',
      eventTypes: ['CAMPAIGN_ENDED'],
      enabled: false,
      secret: endpoint!.secret,
      createdAt: now,
      updatedAt: now,
    });
    const [first, second] = await recordEvents(ctx, [
      {
        campaignId: endpoint!.campaignId,
        type: 'CAMPAIGN_ENDED',
        data: { campaign: { id: endpoint!.campaignId, name: 'c', status: 'COMPLETE', currencyISO: 'USD' } },
      },
      {
        campaignId: endpoint!.campaignId,
        type: 'CAMPAIGN_ENDED',
        data: { campaign: { id: endpoint!.campaignId, name: 'c', status: 'COMPLETE', currencyISO: 'USD' } },
      },
    ]);
    const out = await fanOutEvents(ctx, [first!, second!]);
    expect(out.events).toBe(2);
    const messages = () =>
      ctx.db
        .select({
          id: webhookMessages.id,
          eventId: webhookMessages.eventId,
          endpointId: webhookMessages.endpointId,
        })
        .from(webhookMessages)
        .where(eq(webhookMessages.campaignId, endpoint!.campaignId));
    const made = await messages();
    expect(made).toHaveLength(4);
    const idOf = (eventId: string, to: string) =>
      made.find((m) => m.eventId === eventId && m.endpointId === to)?.id;
    expect(idOf(first!, picky)).toBeDefined();
    // The disabled endpoint's messages are made and kept, but not scheduled.
    expect(out.scheduled).toEqual([
      { messageId: idOf(first!, endpointId), generation: 0, endpointId, eventId: first },
      { messageId: idOf(second!, endpointId), generation: 0, endpointId, eventId: second },
    ]);
    expect(await fanOutEvents(ctx, [first!, second!])).toEqual({ events: 0, scheduled: [], deferred: [] });
    // Fanned out again from scratch (as if marking them dispatched had been lost), the events find the same
    // messages: the ids derive from event and endpoint.
    await ctx.db
      .update(events)
      .set({ dispatchedAt: null })
      .where(inArray(events.id, [first!, second!]));
    expect(await fanOutEvents(ctx, [first!, second!])).toEqual({ events: 2, scheduled: [], deferred: [] });
    expect((await messages()).map((m) => m.id).sort()).toEqual(made.map((m) => m.id).sort());
  });
});
