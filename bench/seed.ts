import type postgres from 'postgres';
import { request } from 'undici';

/** A campaign of the bench account, with its one reward and, when it has one, its webhook endpoint. */
export type BenchCampaign = { id: string; rewardId: string; endpointId: string | null };

export type Seeded = {
  accountId: string;
  apiKey: string;
  /** One campaign per figure, so that no phase's actions, events or messages mix with another's. */
  campaigns: Record<
    'ingest' | 'apply' | 'applyBaseline' | 'dispatch' | 'e2e' | 'e2eOrdered' | 'storage',
    BenchCampaign
  >;
};

/** The bench account's limits: far above anything one machine can send, so none of them is what is measured. */
export const BENCH_RATE_LIMITS = {
  second: 1_000_000,
  minute: 10_000_000,
  hour: 100_000_000,
  concurrency: 100_000,
  slowdownAfter: 0,
};

/** The i-th seeded participant's email (the same in every campaign). */
export const participantEmail = (i: number) => `p${i}@bench.test`;

/**
 * The trigger the ingest and end-to-end loads send to `campaign`: the n-th request is for participant
 * n mod `participants`, each body distinct (`metadata.n`).
 */
export function triggerRequest(apiKey: string, campaign: BenchCampaign, participants: number) {
  return {
    path: `/v1/campaign/${campaign.id}/loyalty-action`,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    // participantEmail(n % participants), metadata { n }: '{i}' and '{n}' stand for them (see `BodyTemplate`).
    body: {
      text: JSON.stringify({
        participantEmail: participantEmail(0).replace('0', '{i}'),
        rewardId: campaign.rewardId,
        metadata: { n: 0 },
      }).replace('"n":0', '"n":{n}'),
      modulo: participants,
    },
  };
}

/** One call to the operator API; anything but a 2xx throws with the answer's body. */
export async function operator(
  apiUrl: string,
  token: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<any> {
  const res = await request(`${apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const text = await res.body.text();
  if (res.statusCode < 200 || res.statusCode > 299) {
    throw new Error(`${method} ${path} answered ${res.statusCode}: ${text.slice(0, 500)}`);
  }
  return text ? JSON.parse(text) : null;
}

/**
 * `n` participants of a campaign in one statement (ids `<campaign>p<i>`, emails `p<i>@bench.test`), with the
 * campaign's and the account's participant counters moved to match.
 */
export async function seedParticipants(sql: postgres.Sql, campaignId: string, n: number): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`
      insert into participants
        (id, campaign_id, email, email_key, counts_month, loyalty_action_source, created_at, updated_at)
      select ${campaignId} || 'p' || g, ${campaignId}, 'p' || g || '@bench.test', 'p' || g || '@bench.test',
        to_char(now() at time zone 'UTC', 'YYYY-MM'), 'IMPORT', now(), now()
      from generate_series(0, ${n}::int - 1) as g`;
    await tx`update campaigns set participant_count = participant_count + ${n} where id = ${campaignId}`;
    await tx`
      update accounts set participant_count = participant_count + ${n}
      where id = (select account_id from campaigns where id = ${campaignId})`;
  });
}

/**
 * Through the operator API, as a business would be set up: an account with its limits raised and no
 * participant quota, an ADMIN user and its API key, one campaign per figure with a reward (10 actions per
 * earning, unlimited), and webhook endpoints for LOYALTY_ACTION_APPLIED on `receiverUrl` for the dispatch and
 * end-to-end campaigns. Then `participants` participants in every campaign, in SQL.
 */
export async function seed(opts: {
  apiUrl: string;
  token: string;
  sql: postgres.Sql;
  participants: number;
  receiverUrl: string;
}): Promise<Seeded> {
  const op = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    operator(opts.apiUrl, opts.token, method, path, body);
  const account = await op('POST', '/admin/v1/accounts', {
    name: 'Bench',
    plan: 'ENTERPRISE',
    participantQuota: null,
    rateLimits: BENCH_RATE_LIMITS,
  });
  const user = await op('POST', `/admin/v1/accounts/${account.id}/users`, {
    email: 'bench@bench.test',
    role: 'ADMIN',
  });
  const { key } = await op('POST', `/admin/v1/users/${user.id}/api-keys`);
  // `every`: an endpoint that takes every event type, as a fulfilment integration does; `ordered`: one that takes
  // LOYALTY_ACTION_APPLIED with `ordering: PARTICIPANT`.
  const campaign = async (name: string, webhooks: boolean | 'every' | 'ordered'): Promise<BenchCampaign> => {
    const c = await op('POST', `/admin/v1/accounts/${account.id}/campaigns`, { name, status: 'IN_PROGRESS' });
    const reward = await op('POST', `/admin/v1/campaigns/${c.id}/rewards`, {
      title: `${name} reward`,
      conversionsRequired: 10,
      isUnlimited: true,
    });
    const endpoint = webhooks
      ? await op('POST', `/admin/v1/campaigns/${c.id}/webhook-endpoints`, {
          url: opts.receiverUrl,
          eventTypes: webhooks === 'every' ? [] : ['LOYALTY_ACTION_APPLIED'],
          ordering: webhooks === 'ordered' ? 'PARTICIPANT' : 'NONE',
        })
      : null;
    await seedParticipants(opts.sql, c.id, opts.participants);
    return { id: c.id, rewardId: reward.id, endpointId: endpoint?.id ?? null };
  };
  return {
    accountId: account.id,
    apiKey: key,
    campaigns: {
      ingest: await campaign('Ingest', false),
      apply: await campaign('Apply', false),
      applyBaseline: await campaign('Apply baseline', false),
      dispatch: await campaign('Dispatch', true),
      e2e: await campaign('End to end', true),
      e2eOrdered: await campaign('End to end, ordered', 'ordered'),
      storage: await campaign('Storage', 'every'),
    },
  };
}
