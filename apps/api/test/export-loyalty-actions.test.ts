import { LOYALTY_ACTION_EXPORT_COLUMNS } from '@stampcard/core';
import { parse } from 'csv-parse/sync';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, expectErrorShape, overHttp } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';

/**
 * `GET /v1/campaign/{id}/loyalty-actions/export`: the ledger of one snapshot, oldest first, filtered by time
 * and status, as CSV a parser reads back (or NDJSON), over real HTTP.
 */
const stack = useTestStack({ http: true });

/**
 * `n` ledger rows of the campaign (ids `act_<tag>_<00001…>`), one a minute from `start`, every third REJECTED,
 * the others APPLIED, for participant `participantId`.
 */
async function seed(
  campaignId: string,
  rewardId: string,
  participantId: string,
  n: number,
  tag: string,
  start: Date,
) {
  await stack.ctx.db.execute(sql`
    insert into loyalty_actions (id, campaign_id, participant_id, reward_id, status, reason, created_at, applied_at)
    select 'act_' || ${tag} || '_' || lpad(g::text, 5, '0'), ${campaignId}, ${participantId}, ${rewardId},
      case when g % 3 = 0 then 'REJECTED' else 'APPLIED' end,
      case when g % 3 = 0 then 'PARTICIPANT_DELETED' end,
      ${start.toISOString()}::timestamptz + (g || ' minutes')::interval,
      case when g % 3 = 0 then null else ${start.toISOString()}::timestamptz + (g || ' minutes')::interval end
    from generate_series(1, ${n}) g`);
}

const exportUrl = (campaignId: string, query = '') =>
  `${stack.baseUrl}/v1/campaign/${campaignId}/loyalty-actions/export${query}`;

async function csvOf(key: string, campaignId: string, query = '') {
  const res = await fetch(exportUrl(campaignId, query), { headers: { authorization: `Bearer ${key}` } });
  expect(res.status, await res.clone().text()).toBe(200);
  const [header, ...records] = parse(await res.text()) as string[][];
  expect(header).toEqual([...LOYALTY_ACTION_EXPORT_COLUMNS]);
  return records.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!])));
}

describe('the loyalty-actions export', () => {
  it("writes the campaign's ledger oldest first, as the API shows each action, with its participant's email", async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 2 } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const email = uniqueEmail('ledger');
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`, {
        participantEmail: email,
        rewardId: w.reward.id,
        metadata: { order: `A-${i}, "gift"`, n: i },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      ids.push(res.body.action.id);
    }
    const rows = await csvOf(w.key, w.campaign.id);
    expect(rows.map((r) => r.id)).toEqual(ids);
    const second = (await api.get(`/v1/campaign/${w.campaign.id}/loyalty-action/${ids[1]}`)).body;
    expect(rows[1]).toMatchObject({
      participantId: second.participantId,
      participantEmail: email,
      rewardId: w.reward.id,
      status: 'APPLIED',
      reason: '',
    });
    expect(JSON.parse(rows[1]!.metadata!)).toEqual({ order: 'A-1, "gift"', n: 1 });
    expect(JSON.parse(rows[1]!.unlockedRewardIds!)).toEqual(second.unlockedRewards.map((r: any) => r.id));
    expect(new Date(rows[1]!.createdAt!).getTime()).toBe(second.createdAt);
    expect(new Date(rows[1]!.appliedAt!).getTime()).toBe(second.appliedAt);

    const ndjson = await fetch(exportUrl(w.campaign.id), {
      headers: { authorization: `Bearer ${w.key}`, accept: 'application/x-ndjson' },
    });
    expect(ndjson.headers.get('content-type')).toBe('application/x-ndjson');
    expect(ndjson.headers.get('content-disposition')).toBe(
      `attachment; filename="loyalty-actions-${w.campaign.id}.ndjson"`,
    );
    const lines = (await ndjson.text())
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.id)).toEqual(ids);
    expect(lines[1]).toMatchObject({
      metadata: { order: 'A-1, "gift"', n: 1 },
      status: 'APPLIED',
      reason: null,
    });
  });

  it('takes [from, to) and a status, exactly, and pages through thousands in order', async () => {
    const w = await makeWorld(stack.ctx);
    const start = new Date('2026-03-01T00:00:00Z');
    await seed(w.campaign.id, w.reward.id, 'par_someone', 2600, 'range', start);
    const all = await csvOf(w.key, w.campaign.id);
    expect(all).toHaveLength(2600);
    expect(all.map((r) => r.id)).toEqual(
      Array.from({ length: 2600 }, (_, i) => `act_range_${String(i + 1).padStart(5, '0')}`),
    );
    expect(all[0]!.participantEmail).toBe('');
    const minute = 60_000;
    const from = start.getTime() + 100 * minute;
    const to = start.getTime() + 1300 * minute;
    const ranged = await csvOf(w.key, w.campaign.id, `?from=${from}&to=${to}`);
    expect(ranged.map((r) => r.id)).toEqual(all.slice(99, 1299).map((r) => r.id));
    const rejected = await csvOf(w.key, w.campaign.id, `?from=${from}&to=${to}&status=REJECTED`);
    expect(rejected).toHaveLength(400);
    expect(rejected.every((r) => r.status === 'REJECTED' && r.reason === 'PARTICIPANT_DELETED')).toBe(true);
  });

  it('pages through actions accepted in the same microsecond, each once', async () => {
    const w = await makeWorld(stack.ctx);
    await stack.ctx.db.execute(sql`
      insert into loyalty_actions (id, campaign_id, participant_id, reward_id, status, created_at)
      select 'act_tie_' || lpad(g::text, 5, '0'), ${w.campaign.id}, 'par_tie', ${w.reward.id}, 'QUEUED',
        '2026-04-01 10:00:00.123456+00'
      from generate_series(1, 2500) g`);
    const rows = await csvOf(w.key, w.campaign.id);
    expect(rows).toHaveLength(2500);
    expect(new Set(rows.map((r) => r.id)).size).toBe(2500);
    expect(rows[0]!.createdAt).toBe('2026-04-01T10:00:00.123Z');
  });

  it('is one snapshot: actions accepted while it streams are not in it', async () => {
    const w = await makeWorld(stack.ctx);
    const start = new Date('2026-04-01T00:00:00Z');
    await seed(w.campaign.id, w.reward.id, 'par_snap', 8000, 'snap', start);
    const res = await fetch(exportUrl(w.campaign.id), { headers: { authorization: `Bearer ${w.key}` } });
    const reader = res.body!.getReader();
    const chunks: Uint8Array[] = [(await reader.read()).value!];
    await seed(w.campaign.id, w.reward.id, 'par_snap', 300, 'late', new Date('2026-05-01T00:00:00Z'));
    await stack.ctx.db.execute(
      sql`update loyalty_actions set status = 'REJECTED' where id = 'act_snap_08000'`,
    );
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
    const [, ...records] = parse(Buffer.concat(chunks).toString('utf8')) as string[][];
    expect(records).toHaveLength(8000);
    expect(new Set(records.map((r) => r[0])).size).toBe(8000);
    expect(records.at(-1)).toEqual(expect.arrayContaining(['act_snap_08000', 'APPLIED']));
  });

  it('refuses a bad filter with the documented 400, naming the parameter', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const base = `/v1/campaign/${w.campaign.id}/loyalty-actions/export`;
    for (const [query, param] of [
      ['?status=LOST', 'status'],
      ['?from=-1', 'from'],
      ['?to=soon', 'to'],
      ['?page=2', 'page'],
    ] as const) {
      const body = expectErrorShape(await api.get(`${base}${query}`), 400, 'VALIDATION_ERROR');
      expect(
        body.errors.map((e: any) => e.param),
        query,
      ).toContain(param);
    }
  });
});
