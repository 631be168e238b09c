import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { connectPostgres, migrationsBefore, runMigrations } from '@stampcard/db';
import type postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

/** PostgreSQL's refusal of a statement, as its SQLSTATE and constraint. */
async function refusal(query: Promise<unknown>): Promise<{ code?: string; constraint_name?: string }> {
  return query.then(
    () => ({}),
    (err: { code?: string; constraint_name?: string }) => ({
      code: err.code,
      constraint_name: err.constraint_name,
    }),
  );
}

describe('tables keyed by account (rewards, webhook endpoints, erasures)', () => {
  const base = inject('baseDatabaseUrl');
  const name = `stampcard_acctkey_${randomBytes(4).toString('hex')}`;
  const url = new URL(base);
  url.pathname = `/${name}`;
  let sql: postgres.Sql;

  beforeAll(async () => {
    // A database of the release before: rows made then get their account from their campaign on upgrade.
    const earlier = migrationsBefore('0026_account_keyed');
    try {
      await runMigrations(url.toString(), earlier);
    } finally {
      rmSync(earlier, { recursive: true, force: true });
    }
    sql = connectPostgres(url.toString(), { max: 1, onnotice: () => {} });
    await sql.unsafe(`
      insert into accounts (id, name, plan) values ('acct_a', 'A', 'GROWTH'), ('acct_b', 'B', 'GROWTH');
      insert into campaigns (id, account_id, name, status, currency_iso)
        values ('cmp_a', 'acct_a', 'A', 'IN_PROGRESS', 'USD'), ('cmp_b', 'acct_b', 'B', 'IN_PROGRESS', 'USD');
      insert into rewards (id, campaign_id) values ('rwd_a', 'cmp_a'), ('rwd_b', 'cmp_b');
      insert into webhook_endpoints (id, campaign_id, url, kind, secret, created_at, updated_at)
        values ('ep_a', 'cmp_a', 'https://example.com/a', 'NOTIFY', 'whsec_x', now(), now());
      insert into erasures (participant_id, campaign_id, state, phase, created_at, touched_at)
        values ('prt_b', 'cmp_b', 'RUNNING', 'EVENTS', now(), now());`);
    await runMigrations(url.toString());
  });

  afterAll(async () => {
    await sql?.end({ timeout: 5 });
    const admin = connectPostgres(base, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
  });

  it('the upgrade gives each existing row its campaign’s account', async () => {
    const rows = await sql<{ t: string; id: string; account_id: string }[]>`
      select 'reward' as t, id, account_id from rewards
      union all select 'endpoint', id, account_id from webhook_endpoints
      union all select 'erasure', participant_id, account_id from erasures
      order by 1, 2`;
    expect(rows.map((r) => [r.t, r.id, r.account_id])).toEqual([
      ['endpoint', 'ep_a', 'acct_a'],
      ['erasure', 'prt_b', 'acct_b'],
      ['reward', 'rwd_a', 'acct_a'],
      ['reward', 'rwd_b', 'acct_b'],
    ]);
  });

  it('a row whose account is not its campaign’s is refused: no key crosses accounts', async () => {
    expect(
      await refusal(
        sql`insert into rewards (id, account_id, campaign_id) values ('rwd_x', 'acct_b', 'cmp_a')`,
      ),
    ).toEqual({ code: '23503', constraint_name: 'rewards_campaign_fk' });
    expect(
      await refusal(sql`
        insert into webhook_endpoints (id, account_id, campaign_id, url, kind, secret, created_at, updated_at)
        values ('ep_x', 'acct_a', 'cmp_b', 'https://example.com/x', 'NOTIFY', 'whsec_x', now(), now())`),
    ).toEqual({ code: '23503', constraint_name: 'webhook_endpoints_campaign_fk' });
    expect(
      await refusal(sql`
        insert into erasures (participant_id, account_id, campaign_id, state, phase, created_at, touched_at)
        values ('prt_x', 'acct_a', 'cmp_b', 'RUNNING', 'EVENTS', now(), now())`),
    ).toEqual({ code: '23503', constraint_name: 'erasures_campaign_fk' });
    expect(
      await refusal(sql`insert into rewards (id, campaign_id) values ('rwd_yx', 'cmp_a')`),
    ).toMatchObject({
      code: '23502',
    });
    const [made] = await sql<{ n: number }[]>`select count(*)::int as n from rewards where id like 'rwd_%x'`;
    expect(made!.n).toBe(0);
  });

  it('a campaign’s deletion still takes its rows with it', async () => {
    await sql`delete from campaigns where id = 'cmp_a'`;
    const [left] = await sql<{ n: number }[]>`
      select ((select count(*) from rewards where campaign_id = 'cmp_a')
        + (select count(*) from webhook_endpoints where campaign_id = 'cmp_a'))::int as n`;
    expect(left!.n).toBe(0);
    const [kept] = await sql<{ n: number }[]>`select count(*)::int as n from rewards where id = 'rwd_b'`;
    expect(kept!.n).toBe(1);
  });
});
