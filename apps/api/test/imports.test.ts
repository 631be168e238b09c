import { IMPORT_REFUSALS_SHOWN } from '@stampcard/core';
import { parse } from 'csv-parse/sync';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, overHttp, type Reply } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { fingerprint, refusals } from '../../../test/support/refused';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';
import { createApp } from '../src/app';

/**
 * `POST /v1/campaign/{id}/participants/imports` against the running stack (API over HTTP, the worker taking the
 * import's jobs): exact counts and reasons, progress while it runs, counts carried over by the unlock rule,
 * nothing imported twice, and a refused upload that stores nothing.
 */
const stack = useTestStack({ http: true, worker: true });
const expectRefused = refusals(stack);

const CSV = { 'content-type': 'text/csv' };
const importsOf = (campaignId: string) => `/v1/campaign/${campaignId}/participants/imports`;

/** The import's answers, polled until it ends; every `rowsDone` seen on the way. */
async function untilEnded(api: ReturnType<typeof client>, location: string, timeoutMs = 60_000) {
  const seen: number[] = [];
  const ended = await eventually(
    async () => {
      const r = await api.get(location);
      seen.push(r.body.rowsDone);
      return r;
    },
    (r) => r.body.status === 'SUCCEEDED' || r.body.status === 'FAILED',
    timeoutMs,
  );
  return { ended: ended.body, seen };
}

async function upload(
  api: ReturnType<typeof client>,
  campaignId: string,
  body: string,
  query = '',
  headers = {},
) {
  return api.post(`${importsOf(campaignId)}${query}`, body, { ...CSV, ...headers });
}

/** Every action the import queued applied (or rejected): the worker is done with it. */
async function untilApplied(campaignId: string) {
  await eventually(
    async () => {
      const [r] = await stack.ctx.db.execute<{ n: number }>(
        sql`select count(*)::int as n from loyalty_actions where campaign_id = ${campaignId} and status = 'QUEUED'`,
      );
      return r!.n;
    },
    (n) => n === 0,
    30_000,
  );
}

async function eventCounts(campaignId: string): Promise<Record<string, number>> {
  const rows = await stack.ctx.db.execute<{ type: string; n: number }>(
    sql`select type, count(*)::int as n from events where campaign_id = ${campaignId} group by type`,
  );
  return Object.fromEntries(rows.map((r) => [r.type, r.n]));
}

describe('an import of 10,000 rows', () => {
  it('gives exact counts and reasons for blacklisted, duplicate, malformed and over-quota rows, with progress on the way', async () => {
    const w = await makeWorld(stack.ctx, {
      account: { participantQuota: 9000 },
      campaign: { antiFraud: { level: 'STANDARD', blacklist: ['*@blocked.example'] } },
    });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const tag = uniqueEmail('t').split('@')[0];
    const lines = ['email,firstName,lastName,metadata.tier'];
    const expected = {
      blocked: [] as number[],
      duplicate: [] as number[],
      malformed: [] as number[],
      quota: [] as number[],
    };
    let valid = 0;
    for (let row = 1; row <= 10_000; row++) {
      const kind = row % 100;
      if (kind === 10) {
        lines.push(`b${row}-${tag}@blocked.example,Blocked,Row,`);
        expected.blocked.push(row);
      } else if (kind === 11) {
        // The email of row - 2 (a valid row), in other case and with spaces: the same after normalisation.
        lines.push(` U${row - 2}-${tag}@Example.com ,Again,"Row, twice",`);
        expected.duplicate.push(row);
      } else if (kind === 12) {
        lines.push(`not-an-email-${row},Bad,Email,`);
        expected.malformed.push(row);
      } else if (kind === 13) {
        lines.push(`u${row}-${tag}@example.com,Too,Many,cells,here`);
        expected.malformed.push(row);
      } else {
        valid += 1;
        lines.push(`u${row}-${tag}@example.com,"Name ${row}","Quote ""${row}""",${row % 2 ? 'gold' : 7}`);
        if (valid > 9000) expected.quota.push(row);
      }
    }
    const res = await upload(api, w.campaign.id, `${lines.join('\r\n')}\r\n`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({
      status: 'QUEUED',
      rowsTotal: null,
      rowsDone: 0,
      mode: 'SET',
      format: 'CSV',
    });
    expect(res.headers.get('location')).toBe(`${importsOf(w.campaign.id)}/${res.body.id}`);

    const { ended, seen } = await untilEnded(api, res.headers.get('location')!);
    expect(ended).toMatchObject({
      status: 'SUCCEEDED',
      rowsTotal: 10_000,
      rowsDone: 10_000,
      created: 9000,
      updated: 0,
      unchanged: 0,
      refused: 1000,
      loyaltyActionsQueued: 0,
      error: null,
    });
    // Progress moved while it ran: answers between the first and the last batch.
    expect(
      seen.some((n) => n > 0 && n < 10_000),
      seen.join(','),
    ).toBe(true);
    expect(ended.refusedRows).toHaveLength(IMPORT_REFUSALS_SHOWN);
    expect(ended.refusedRows[0]).toEqual({
      row: 10,
      reason: 'PARTICIPANT_BLOCKED',
      message: expect.stringContaining('blacklist'),
    });

    const file = await fetch(`${stack.baseUrl}${ended.refusedRowsUrl}`, {
      headers: { authorization: `Bearer ${w.key}` },
    });
    expect(file.status).toBe(200);
    const [header, ...records] = parse(await file.text(), { relax_column_count: true }) as string[][];
    expect(header).toEqual(['row', 'reason', 'message', 'email', 'firstName', 'lastName', 'metadata.tier']);
    const byReason = (reason: string) => records.filter((r) => r[1] === reason).map((r) => Number(r[0]));
    expect(byReason('PARTICIPANT_BLOCKED')).toEqual(expected.blocked);
    expect(byReason('DUPLICATE_ROW')).toEqual(expected.duplicate);
    expect(byReason('VALIDATION_ERROR')).toEqual(expected.malformed);
    expect(byReason('USAGE_LIMIT')).toEqual(expected.quota);
    // The refused row as it was read, comma and all, to fix and import again.
    const dup = records.find((r) => Number(r[0]) === 11)!;
    expect(dup.slice(3)).toEqual([` U9-${tag}@Example.com `, 'Again', 'Row, twice', '']);
    expect(dup[2]).toBe('the email is on row 9 already');

    const [counted] = await stack.ctx.db.execute<{
      participants: number;
      account: number;
      imported: number;
    }>(sql`
      select (select count(*)::int from participants where campaign_id = ${w.campaign.id}) as participants,
        (select participant_count from accounts where id = ${w.account.id}) as account,
        (select count(*)::int from participants where campaign_id = ${w.campaign.id} and loyalty_action_source = 'IMPORT') as imported`);
    expect(counted).toEqual({ participants: 9000, account: 9000, imported: 9000 });
    const one = await api.get(`/v1/campaign/${w.campaign.id}/participant/u1-${tag}@example.com`);
    expect(one.body).toMatchObject({
      firstName: 'Name 1',
      lastName: 'Quote "1"',
      metadata: { tier: 'gold' },
    });
    const two = await api.get(`/v1/campaign/${w.campaign.id}/participant/u2-${tag}@example.com`);
    expect(two.body.metadata).toEqual({ tier: 7 });
    // Its file and its emails are gone with the import; its refused rows stay.
    const [left] = await stack.ctx.db.execute<{ chunks: number; emails: number; refused: number }>(sql`
      select (select count(*)::int from participant_import_chunks where import_id = ${res.body.id}) as chunks,
        (select count(*)::int from participant_import_emails where import_id = ${res.body.id}) as emails,
        (select count(*)::int from participant_import_refusals where import_id = ${res.body.id}) as refused`);
    expect(left).toEqual({ chunks: 0, emails: 0, refused: 1000 });
    expect(await eventCounts(w.campaign.id)).toEqual({ NEW_PARTICIPANT_ADDED: 9000 });
  });
});

describe('the rules of an add', () => {
  it('anti-fraud, the lists and the IP throttle judge each row, against the campaign and the rows before it', async () => {
    const w = await makeWorld(stack.ctx, {
      campaign: { antiFraud: { level: 'STRICT', ipThrottle: 3, whitelist: ['vip.example'] } },
    });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const tag = uniqueEmail('g')
      .split('@')[0]!
      .replace(/[^a-z0-9]/g, '');
    const there = await api.post(`/v1/campaign/${w.campaign.id}/participant`, {
      email: `${tag}.one@gmail.com`,
    });
    expect(there.status).toBe(200);
    const ip = '203.0.113.9';
    const rows = [
      `${tag}one+shop@gmail.com,,`, // 1: the API's participant after normalisation → DUPLICATE_EMAIL, refused (STRICT)
      `${tag}two@gmail.com,,`, // 2
      `${tag}.two@gmail.com,,`, // 3: row 2 after normalisation → refused
      `${tag}-a@example.com,${ip},`, // 4..6: three from one address, the throttle's bound
      `${tag}-b@example.com,${ip},`,
      `${tag}-c@example.com,${ip},`,
      `${tag}-d@example.com,${ip},`, // 7: the fourth → BLOCKED_IP, and the address is blocked
      `${tag}-e@vip.example,${ip},`, // 8: whitelisted, so not scored: created
      `${tag}-f@example.com,${ip},`, // 9: blocked address → BLOCKED_IP
    ];
    const res = await upload(api, w.campaign.id, `email,ipAddress,firstName\r\n${rows.join('\r\n')}\r\n`);
    const { ended } = await untilEnded(api, res.headers.get('location')!);
    expect(ended).toMatchObject({ status: 'SUCCEEDED', created: 5, refused: 4 });
    expect(ended.refusedRows.map((r: { row: number; reason: string }) => [r.row, r.reason])).toEqual([
      [1, 'PARTICIPANT_BLOCKED'],
      [3, 'PARTICIPANT_BLOCKED'],
      [7, 'PARTICIPANT_BLOCKED'],
      [9, 'PARTICIPANT_BLOCKED'],
    ]);
    expect(ended.refusedRows[0].message).toContain('same email');
    expect(ended.refusedRows[2].message).toContain('blocked for 24 hours');
    // The address stays blocked for the API's adds as well.
    const add = await api.post(`/v1/campaign/${w.campaign.id}/participant`, {
      email: uniqueEmail('late'),
      ipAddress: ip,
    });
    expect(add.status).toBe(422);
    expect(add.body.fraudReasonCode).toBe('BLOCKED_IP');
    const vip = await api.get(`/v1/campaign/${w.campaign.id}/participant/${tag}-e@vip.example`);
    expect(vip.body).toMatchObject({ fraudReasonCode: 'WHITELISTED', loyaltyActionSource: 'IMPORT' });
  });

  it('keeps the quota exact while the API adds participants at the same time', async () => {
    const w = await makeWorld(stack.ctx, { account: { participantQuota: 700 } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const lines = Array.from({ length: 1000 }, (_, i) => `${uniqueEmail(`q${i}`)}`);
    const res = await upload(api, w.campaign.id, `email\r\n${lines.join('\r\n')}\r\n`);
    expect(res.status).toBe(202);
    let added = 0;
    for (let i = 0; i < 100; i++) {
      const r = await api.post(`/v1/campaign/${w.campaign.id}/participant`, { email: uniqueEmail('api') });
      if (r.status === 200) added += 1;
      else expect(r.body.code).toBe('USAGE_LIMIT');
    }
    const { ended } = await untilEnded(api, res.headers.get('location')!);
    expect(ended.created + added).toBe(700);
    expect(ended.refused).toBe(1000 - ended.created);
    const [n] = await stack.ctx.db.execute<{ participants: number; counted: number }>(sql`
      select (select count(*)::int from participants where campaign_id = ${w.campaign.id}) as participants,
        (select participant_count from accounts where id = ${w.account.id}) as counted`);
    expect(n).toEqual({ participants: 700, counted: 700 });
  });
});

describe('counts carried over', () => {
  it('unlock rewards by the same rule as actions, with the same events, exactly once', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 3, limit: 2 } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const [a, b, c] = [uniqueEmail('a'), uniqueEmail('b'), uniqueEmail('c')];
    const col = `loyaltyActionCount.${w.reward.id}`;
    const res = await upload(api, w.campaign.id, `email,${col}\r\n${a},10\r\n${b},2\r\n`);
    expect(res.status).toBe(202);
    const { ended } = await untilEnded(api, res.headers.get('location')!);
    expect(ended).toMatchObject({ status: 'SUCCEEDED', created: 2, loyaltyActionsQueued: 12 });
    await untilApplied(w.campaign.id);
    // The same ten counts by ten triggers, for comparison.
    for (let i = 0; i < 10; i++) {
      const t = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: c,
        rewardId: w.reward.id,
        addParticipantIfNoneExists: true,
        // Each its own request: an identical one while the last is still QUEUED is a 409.
        metadata: { i },
      });
      expect(t.status).toBe(200);
    }
    await untilApplied(w.campaign.id);
    const show = async (email: string) =>
      (await api.get(`/v1/campaign/${w.campaign.id}/participant/${email}`)).body;
    const [pa, pb, pc] = [await show(a), await show(b), await show(c)];
    expect(pa).toMatchObject({ loyaltyActionCount: 10, rewardCount: 2, loyaltyActionSource: 'IMPORT' });
    expect(pb).toMatchObject({ loyaltyActionCount: 2, rewardCount: 0 });
    expect(pc).toMatchObject({ loyaltyActionCount: 10, rewardCount: pa.rewardCount });
    expect(await eventCounts(w.campaign.id)).toEqual({
      NEW_PARTICIPANT_ADDED: 3,
      LOYALTY_ACTION_APPLIED: 22,
      PARTICIPANT_REACHED_A_GOAL: 4,
    });
    // The ledger says where each count came from.
    const [ledger] = await stack.ctx.db.execute<{ imported: number; tagged: number }>(sql`
      select count(*) filter (where import_id = ${res.body.id})::int as imported,
        count(*) filter (where metadata ->> 'source' = 'IMPORT' and metadata ->> 'importId' = ${res.body.id})::int as tagged
      from loyalty_actions where campaign_id = ${w.campaign.id}`);
    expect(ledger).toEqual({ imported: 12, tagged: 12 });

    // SET again, by another file (a note added): nothing counted twice, the note changed.
    const before = await eventCounts(w.campaign.id);
    const again = await upload(api, w.campaign.id, `email,notes,${col}\r\n${a},moved,10\r\n${b},,1\r\n`);
    const second = (await untilEnded(api, again.headers.get('location')!)).ended;
    expect(second).toMatchObject({
      status: 'SUCCEEDED',
      created: 0,
      updated: 1,
      unchanged: 1,
      loyaltyActionsQueued: 0,
    });
    expect(await show(a)).toMatchObject({ loyaltyActionCount: 10, rewardCount: 2, notes: 'moved' });
    expect(await eventCounts(w.campaign.id)).toEqual({ ...before, PARTICIPANT_UPDATED: 1 });

    // ADD adds; SET below the count leaves it (counts never go down).
    const added = await upload(api, w.campaign.id, `email,${col}\r\n${b},1\r\n`, '?mode=ADD');
    expect((await untilEnded(api, added.headers.get('location')!)).ended).toMatchObject({
      updated: 1,
      loyaltyActionsQueued: 1,
    });
    await untilApplied(w.campaign.id);
    expect(await show(b)).toMatchObject({ loyaltyActionCount: 3, rewardCount: 1 });
  });

  it('with silent=true count and unlock, and record no event', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 2 } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const [a, b] = [uniqueEmail('quiet'), uniqueEmail('quiet')];
    await api.post(`/v1/campaign/${w.campaign.id}/participant`, { email: b, firstName: 'Before' });
    const res = await upload(
      api,
      w.campaign.id,
      `email,firstName,loyaltyActionCount.${w.reward.id}\r\n${a},Ada,5\r\n${b},After,\r\n`,
      '?silent=true',
    );
    const { ended } = await untilEnded(api, res.headers.get('location')!);
    expect(ended).toMatchObject({ silent: true, created: 1, updated: 1, loyaltyActionsQueued: 5 });
    await untilApplied(w.campaign.id);
    const pa = (await api.get(`/v1/campaign/${w.campaign.id}/participant/${a}`)).body;
    expect(pa).toMatchObject({ loyaltyActionCount: 5, rewardCount: 1 });
    expect((await api.get(`/v1/campaign/${w.campaign.id}/participant/${b}`)).body.firstName).toBe('After');
    // Only the API's own add left an event.
    expect(await eventCounts(w.campaign.id)).toEqual({ NEW_PARTICIPANT_ADDED: 1 });
  });
});

describe('nothing is imported twice', () => {
  it('the same file again answers the first import and changes nothing', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const file = `email,loyaltyActionCount.${w.reward.id}\r\n${uniqueEmail('twice')},3\r\n${uniqueEmail('twice')},4\r\n`;
    const first = await upload(api, w.campaign.id, file, '?mode=ADD');
    expect(first.status).toBe(202);
    await untilEnded(api, first.headers.get('location')!);
    await untilApplied(w.campaign.id);
    const before = await fingerprint(stack.ctx.db);
    const second = await upload(api, w.campaign.id, file, '?mode=ADD');
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toMatchObject({
      id: first.body.id,
      status: 'SUCCEEDED',
      created: 2,
      loyaltyActionsQueued: 7,
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(await fingerprint(stack.ctx.db)).toEqual(before);
    // Other options make another import: SET finds the counts there already.
    const set = await upload(api, w.campaign.id, file);
    expect(set.status).toBe(202);
    expect((await untilEnded(api, set.headers.get('location')!)).ended).toMatchObject({
      unchanged: 2,
      loyaltyActionsQueued: 0,
    });
  });

  it('the same Idempotency-Key answers its import; with another file it is a 400 and stores nothing', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const key = { 'idempotency-key': `import-${uniqueEmail('k')}` };
    const file = `email\r\n${uniqueEmail('key')}\r\n`;
    const first = await upload(api, w.campaign.id, file, '', key);
    expect(first.status).toBe(202);
    const again = await upload(api, w.campaign.id, file, '', key);
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    await untilEnded(api, first.headers.get('location')!);
    const refused = await expectRefused(
      () => upload(api, w.campaign.id, `email\r\n${uniqueEmail('other')}\r\n`, '', key),
      400,
      'VALIDATION_ERROR',
    );
    expect(refused.errors[0]).toMatchObject({ location: 'headers', param: 'Idempotency-Key' });
  });
});

describe('an upload that cannot be imported', () => {
  it('is a 400 naming the problem, with nothing stored', async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const send =
      (body: string, headers: Record<string, string> = CSV) =>
      () =>
        api.post(importsOf(w.campaign.id), body, headers);
    const header = async (body: string, msg: string) => {
      const e = await expectRefused(send(body), 400, 'VALIDATION_ERROR');
      expect(e.errors.map((i: { msg: string }) => i.msg).join('; ')).toContain(msg);
    };
    await header('firstName,lastName\r\nAda,Lovelace\r\n', 'no email column');
    await header('email,age\r\na@example.com,3\r\n', 'column "age" is not one of');
    await header(
      `email,loyaltyActionCount.${other.reward.id}\r\na@example.com,3\r\n`,
      'names no reward of this campaign',
    );
    await header('email,metadata.__proto__\r\na@example.com,x\r\n', 'not __proto__');
    await header('email,email\r\na@example.com,b@example.com\r\n', 'appears more than once');
    await header('', 'the file is empty');
    await header('"email,firstName\r\n', 'not valid CSV');
    const type = await expectRefused(
      send('email\r\na@example.com\r\n', { 'content-type': 'text/plain' }),
      400,
      'VALIDATION_ERROR',
    );
    expect(type.message).toContain('text/csv');
    // A JSON body is held to its schema: a row that is not an object is the request's problem, not a row's.
    await expectRefused(
      send('[{"email": "a@example.com"}, 3]', { 'content-type': 'application/json' }),
      400,
      'VALIDATION_ERROR',
    );
    await expectRefused(
      send('[{"email": "a@example.com", "__proto__": {}}]', { 'content-type': 'application/json' }),
      400,
      'VALIDATION_ERROR',
    );
    const done = await makeWorld(stack.ctx, { campaign: { status: 'COMPLETE' } });
    await expectRefused(
      () =>
        client(overHttp(stack.baseUrl!), done.key).post(
          importsOf(done.campaign.id),
          'email\r\na@example.com\r\n',
          CSV,
        ),
      400,
      'INVALID_STATE',
    );
    await expectRefused(
      () => api.post(importsOf(other.campaign.id), 'email\r\na@example.com\r\n', CSV),
      403,
      'NOT_AUTHORIZED',
    );
    await expectRefused(() => api.get(`${importsOf(w.campaign.id)}/imp_nothing`), 404, 'NOT_FOUND');
  });

  it('streams in a bounded number at once: one more is a 429 with Retry-After, and a finished one frees its slot', async () => {
    const w = await makeWorld(stack.ctx);
    const app = createApp({ ...stack.deps, importConcurrency: 1 });
    const send = (body: RequestInit['body']) =>
      app.request(importsOf(w.campaign.id), {
        method: 'POST',
        headers: { authorization: `Bearer ${w.key}`, ...CSV },
        body,
        duplex: 'half',
      } as RequestInit);
    let finish!: () => void;
    let pulls = 0;
    const held = send(
      new ReadableStream<Uint8Array>({
        async pull(controller: ReadableStreamDefaultController<Uint8Array>) {
          if (pulls++ === 0) return controller.enqueue(Buffer.from(`email\r\n${uniqueEmail('held')}\r\n`));
          await new Promise<void>((resolve) => {
            finish = resolve;
          });
          controller.close();
        },
      }),
    );
    // The held upload's insert is in: it has its slot, its transaction is open, and it waits for the rest of its
    // body (the second pull; another session idle in transaction for a moment is not enough on a busy machine).
    await eventually(
      async () => ({
        pulls,
        idle: (
          await stack.ctx.db.execute<{ n: number }>(sql`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and state = 'idle in transaction'`)
        )[0]!.n,
      }),
      (v) => v.pulls >= 2 && v.idle >= 1,
    );
    const refused = await send(`email\r\n${uniqueEmail('second')}\r\n`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await refused.json()).toMatchObject({ code: 'RATE_LIMIT', policyName: 'CONCURRENCY' });
    finish();
    expect((await held).status).toBe(202);
    expect((await send(`email\r\n${uniqueEmail('third')}\r\n`)).status).toBe(202);
    // Both imports run to their end before the next test looks at the database.
    await eventually(
      () =>
        stack.ctx.db.execute<{ n: number }>(sql`
        select count(*)::int as n from participant_imports
        where campaign_id = ${w.campaign.id} and status in ('QUEUED', 'RUNNING')`),
      (rows) => rows[0]!.n === 0,
    );
  });

  it('past 50 MiB is a 400, streamed or stated, and nothing is stored', async () => {
    const w = await makeWorld(stack.ctx);
    const before = await fingerprint(stack.ctx.db);
    const line = Buffer.from(`${'x'.repeat(60)}@example.com\r\n`);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > 51 * 1024 * 1024) return controller.close();
        const chunk = Buffer.concat([
          sent === 0 ? Buffer.from('email\r\n') : Buffer.alloc(0),
          ...Array(1024).fill(line),
        ]);
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${stack.baseUrl}${importsOf(w.campaign.id)}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${w.key}`, ...CSV },
      body,
      duplex: 'half',
    } as RequestInit).catch((err: Error) => err);
    // The server answers 400 and closes; a client still sending may see the connection end instead.
    if (!(res instanceof Error)) {
      expect(res.status).toBe(400);
      expect(((await res.json()) as { message: string }).message).toContain('50 MiB');
    }
    expect(await fingerprint(stack.ctx.db)).toEqual(before);
    const stated = await fetch(`${stack.baseUrl}${importsOf(w.campaign.id)}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${w.key}`, ...CSV, 'content-length': String(60 * 1024 * 1024) },
      body: 'email\r\n',
    }).catch((err: Error) => err);
    if (!(stated instanceof Error)) expect(stated.status).toBe(400);
    expect(await fingerprint(stack.ctx.db)).toEqual(before);
  });

  it('a file that is not valid CSV further down fails the import before any row is imported', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const rows = Array.from({ length: 3000 }, (_, i) => `${uniqueEmail(`r${i}`)},ok`);
    rows.splice(2500, 0, `${uniqueEmail('bad')},"never closed`);
    const res = await upload(api, w.campaign.id, `email,firstName\r\n${rows.join('\r\n')}\r\n`);
    expect(res.status).toBe(202);
    const { ended } = await untilEnded(api, res.headers.get('location')!);
    expect(ended).toMatchObject({ status: 'FAILED', rowsDone: 0, created: 0, rowsTotal: null });
    expect(ended.error).toMatch(/not valid CSV.*line/i);
    const [n] = await stack.ctx.db.execute<{ n: number }>(
      sql`select count(*)::int as n from participants where campaign_id = ${w.campaign.id}`,
    );
    expect(n!.n).toBe(0);
    // A FAILED import does not hold its file back: fixed, it imports.
    const fixed = await upload(
      api,
      w.campaign.id,
      `email,firstName\r\n${rows.filter((r) => !r.includes('never')).join('\r\n')}\r\n`,
    );
    expect((await untilEnded(api, fixed.headers.get('location')!)).ended).toMatchObject({
      status: 'SUCCEEDED',
      created: 3000,
    });
  });
});

describe('a JSON import', () => {
  it('takes an array of rows, keeps metadata types, and refuses a bad row alone', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const [a, b] = [uniqueEmail('json'), uniqueEmail('json')];
    const res: Reply = await api.post(importsOf(w.campaign.id), [
      {
        email: a,
        firstName: 'Ada',
        metadata: { zip: '007', visits: 5, vip: true },
        loyaltyActionCount: { [w.reward.id]: 2 },
      },
      { email: 'nope', firstName: 'Bad' },
      { email: b, notes: 'line\nbreak, "quoted"' },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.format).toBe('JSON');
    const { ended } = await untilEnded(api, res.headers.get('location')!);
    expect(ended).toMatchObject({ status: 'SUCCEEDED', created: 2, refused: 1, loyaltyActionsQueued: 2 });
    expect(ended.refusedRows).toEqual([
      { row: 2, reason: 'VALIDATION_ERROR', message: 'email must be an email address' },
    ]);
    const pa = (await api.get(`/v1/campaign/${w.campaign.id}/participant/${a}`)).body;
    expect(pa.metadata).toEqual({ zip: '007', visits: 5, vip: true });
    expect((await api.get(`/v1/campaign/${w.campaign.id}/participant/${b}`)).body.notes).toBe(
      'line\nbreak, "quoted"',
    );
  });
});

describe("the operator's import", () => {
  it('imports into any campaign, and is read on both APIs', async () => {
    const w = await makeWorld(stack.ctx);
    const op = client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
    const res = await op.post(
      `/admin/v1/campaigns/${w.campaign.id}/participants/import`,
      `email\r\n${uniqueEmail('op')}\r\n`,
      CSV,
    );
    expect(res.status).toBe(202);
    await eventually(
      () => op.get(`/admin/v1/campaigns/${w.campaign.id}/participants/imports/${res.body.id}`),
      (r) => r.body.status === 'SUCCEEDED',
    );
    const mine = await client(overHttp(stack.baseUrl!), w.key).get(res.headers.get('location')!);
    expect(mine.body).toMatchObject({ id: res.body.id, created: 1 });
    const [row] = await stack.ctx.db.execute<{ actor_kind: string; actor_id: string | null }>(
      sql`select actor_kind, actor_id from participant_imports where id = ${res.body.id}`,
    );
    expect(row).toEqual({ actor_kind: 'OPERATOR', actor_id: null });
    const listed = await client(overHttp(stack.baseUrl!), w.key).get(importsOf(w.campaign.id));
    expect(listed.body.items.map((i: { id: string }) => i.id)).toEqual([res.body.id]);
  });
});
