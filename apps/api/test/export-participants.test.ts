import { monthKey, PARTICIPANT_EXPORT_COLUMNS } from '@stampcard/core';
import { parse } from 'csv-parse/sync';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../../../test/support/client';
import { consoleSession } from '../../../test/support/console';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';
import { createApp } from '../src/app';

/**
 * `GET /v1/campaign/{id}/participants/export`: every participant of one snapshot exactly once, as CSV a parser
 * reads back equal (or NDJSON), streamed over real HTTP while participants are added; bounded exports at once.
 */
const stack = useTestStack({ http: true });

/** `n` participants of the campaign, made by one INSERT … SELECT (ids `par_<tag>_<00001…>`). */
async function seed(campaignId: string, n: number, tag: string) {
  await stack.ctx.db.execute(sql`
    insert into participants (id, campaign_id, email, counts_month, loyalty_action_source, created_at, updated_at)
    select 'par_' || ${tag} || '_' || lpad(g::text, 5, '0'), ${campaignId}, ${tag} || g || '@example.com',
      ${monthKey(new Date())}, 'DIRECT', now(), now()
    from generate_series(1, ${n}) g`);
}

const exportUrl = (campaignId: string) => `${stack.baseUrl}/v1/campaign/${campaignId}/participants/export`;

describe('the participants export', () => {
  it('writes every participant as the API shows them, in CSV that a parser reads back equal', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const tricky = [
      { firstName: 'Ada, "the first"', lastName: 'Line\nbreak', notes: '=1+1' },
      { firstName: 'Zoë', lastName: "O'Brien", notes: 'tab\there; semi;colon' },
      { firstName: '名前', lastName: '', notes: '' },
    ];
    for (const t of tricky) {
      const res = await api.post(`/v1/campaign/${w.campaign.id}/participant`, {
        email: uniqueEmail('x'),
        ...t,
        metadata: { tier: 'gold, "vip"', visits: 3, ok: true, none: null },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    const other = await makeWorld(stack.ctx);
    await seed(other.campaign.id, 3, 'elsewhere');

    const res = await fetch(exportUrl(w.campaign.id), { headers: { authorization: `Bearer ${w.key}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="participants-${w.campaign.id}.csv"`,
    );
    const text = await res.text();
    const [header, ...records] = parse(text) as string[][];
    expect(header).toEqual([...PARTICIPANT_EXPORT_COLUMNS]);
    expect(records).toHaveLength(3);

    const listed = await api.get(`/v1/campaign/${w.campaign.id}/participants?limit=100`);
    const byId = new Map<string, Record<string, unknown>>(
      listed.body.participants.map((p: any) => [p.id, p]),
    );
    for (const r of records) {
      const row = Object.fromEntries(header!.map((h, i) => [h, r[i]]));
      const p = byId.get(row.id!)!;
      expect(p, row.id).toBeDefined();
      expect(row.email).toBe(p.email);
      expect(row.firstName).toBe(p.firstName);
      expect(row.lastName).toBe(p.lastName ?? '');
      expect(row.notes).toBe(p.notes ?? '');
      expect(JSON.parse(row.metadata!)).toEqual(p.metadata);
      expect(row.isWinner).toBe('false');
      expect(row.loyaltyActionCount).toBe('0');
      expect(new Date(row.createdAt!).getTime()).toBe(p.createdAt);
    }
    expect(records.map((r) => r[2]).sort()).toEqual(tricky.map((t) => t.firstName).sort());
  });

  it('answers NDJSON when asked, one object a line with the same columns', async () => {
    const w = await makeWorld(stack.ctx);
    await seed(w.campaign.id, 5, 'nd');
    const res = await fetch(exportUrl(w.campaign.id), {
      headers: { authorization: `Bearer ${w.key}`, accept: 'application/x-ndjson' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await res.text()).trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    const first = JSON.parse(lines[0]!);
    expect(Object.keys(first)).toEqual([...PARTICIPANT_EXPORT_COLUMNS]);
    expect(first).toMatchObject({
      id: 'par_nd_00001',
      email: 'nd1@example.com',
      metadata: {},
      isWinner: false,
    });
  });

  it('is one snapshot: participants added while it streams are not in it, and each one there is in it once', async () => {
    const w = await makeWorld(stack.ctx);
    await seed(w.campaign.id, 8000, 'snap');
    const res = await fetch(exportUrl(w.campaign.id), { headers: { authorization: `Bearer ${w.key}` } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const chunks: Uint8Array[] = [];
    const first = await reader.read();
    chunks.push(first.value!);
    // While the export streams (most of its eight pages still to come): 200 more participants, some of them
    // with ids that sort among the ones still to be read, and one already read changed.
    await seed(w.campaign.id, 200, 'snaq');
    await stack.ctx.db.execute(
      sql`update participants set first_name = 'Changed' where id = 'par_snap_00001'`,
    );
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
    const [, ...records] = parse(Buffer.concat(chunks).toString('utf8')) as string[][];
    const ids = records.map((r) => r[0]!);
    expect(ids).toHaveLength(8000);
    expect(new Set(ids).size).toBe(8000);
    expect(ids.every((id) => id.startsWith('par_snap_'))).toBe(true);
    expect(records[0]![2]).toBe('');
  });

  it('breaks the connection when the database fails midway, rather than end a partial file, and frees its slot', async () => {
    const w = await makeWorld(stack.ctx);
    await seed(w.campaign.id, 8000, 'cut');
    const app = createApp({ ...stack.deps, exportConcurrency: 1 });
    const ask = () =>
      app.request(`/v1/campaign/${w.campaign.id}/participants/export`, {
        headers: { authorization: `Bearer ${w.key}` },
      });
    const res = await ask();
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    // The export waits for its reader inside its transaction (once its queue is full): its connection goes
    // away there.
    const killed = await eventually(
      () =>
        stack.ctx.db.execute<{ n: number }>(sql`
          select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
          where datname = current_database() and state = 'idle in transaction' and pid <> pg_backend_pid()`),
      (rows) => rows[0]!.n === 1,
    );
    expect(killed[0]!.n).toBe(1);
    const rest = (async () => {
      for (;;) if ((await reader.read()).done) return 'ended';
    })();
    await expect(rest).rejects.toThrow();
    let again = await ask();
    for (let i = 0; again.status === 429 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 20));
      again = await ask();
    }
    expect(again.status).toBe(200);
    await again.body!.cancel();
  });

  it('runs a bounded number at once: one more is a 429 with Retry-After, and a reader that leaves frees its slot', async () => {
    const w = await makeWorld(stack.ctx);
    await seed(w.campaign.id, 5000, 'slot');
    const app = createApp({ ...stack.deps, exportConcurrency: 1 });
    const ask = () =>
      app.request(`/v1/campaign/${w.campaign.id}/participants/export`, {
        headers: { authorization: `Bearer ${w.key}` },
      });
    const running = await ask();
    expect(running.status).toBe(200);
    const reader = running.body!.getReader();
    await reader.read();
    const refused = await ask();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await refused.json()).toMatchObject({ code: 'RATE_LIMIT', policyName: 'CONCURRENCY' });
    // The reader goes away mid-export: its transaction ends and its slot is free again.
    await reader.cancel();
    let again = await ask();
    for (let i = 0; again.status === 429 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 20));
      again = await ask();
    }
    expect(again.status).toBe(200);
    const [, ...records] = parse(await again.text()) as string[][];
    expect(records).toHaveLength(5000);
  });

  it("is refused for another account's campaign and without a key", async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeWorld(stack.ctx);
    const foreign = await fetch(exportUrl(other.campaign.id), {
      headers: { authorization: `Bearer ${w.key}` },
    });
    expect(foreign.status).toBe(403);
    expect(await foreign.json()).toMatchObject({ code: 'NOT_AUTHORIZED' });
    const anonymous = await fetch(exportUrl(w.campaign.id));
    expect(anonymous.status).toBe(403);
    expect(await anonymous.json()).toMatchObject({ code: 'NOT_AUTHORIZED' });
  });

  it("is the console's participants page's download: the same CSV, for a signed-in operator only", async () => {
    const w = await makeWorld(stack.ctx);
    await seed(w.campaign.id, 30, 'console');
    const { cookie } = await consoleSession(stack.baseUrl!);
    const page = await fetch(`${stack.baseUrl}/console/participants?campaignId=${w.campaign.id}`, {
      headers: { cookie },
    });
    expect(page.status).toBe(200);
    const link = `/console/participants/export?campaignId=${w.campaign.id}`;
    expect(await page.text()).toContain(`href="${link}"`);
    const res = await fetch(`${stack.baseUrl}${link}`, { headers: { cookie } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const [header, ...records] = parse(await res.text()) as string[][];
    expect(header).toEqual([...PARTICIPANT_EXPORT_COLUMNS]);
    expect(records.map((r) => r[0])).toEqual(
      Array.from({ length: 30 }, (_, i) => `par_console_${String(i + 1).padStart(5, '0')}`),
    );
    // The ledger's download beside it: the campaign's actions, oldest first.
    await stack.ctx.db.execute(sql`
      insert into loyalty_actions (id, campaign_id, participant_id, reward_id, status, created_at)
      select 'act_console_' || g, ${w.campaign.id}, 'par_console_00001', ${w.reward.id}, 'APPLIED',
        now() - (10 - g) * interval '1 minute'
      from generate_series(1, 3) g`);
    const ledger = await fetch(
      `${stack.baseUrl}/console/participants/export-actions?campaignId=${w.campaign.id}`,
      {
        headers: { cookie },
      },
    );
    expect(ledger.status).toBe(200);
    const [, ...actions] = parse(await ledger.text()) as string[][];
    expect(actions.map((r) => [r[0], r[2]])).toEqual([
      ['act_console_1', 'console1@example.com'],
      ['act_console_2', 'console1@example.com'],
      ['act_console_3', 'console1@example.com'],
    ]);
    const anonymous = await fetch(`${stack.baseUrl}${link}`, { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toBe('/console/sign-in');
  });
});
