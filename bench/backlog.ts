import { randomBytes } from 'node:crypto';
import { enqueueActions } from '@stampcard/jobs';
import type { Bench } from './context';
import type { BenchCampaign } from './seed';

/**
 * The accept path's result without the HTTP: `n` QUEUED ledger rows for `campaign` in one statement (the
 * i-th for participant i mod `participants`, metadata `{ n: i }`), then their jobs as the API's accept path
 * makes them (`enqueueActions`: `loyalty-action-batch.apply` jobs of up to 64 actions), 1,000 actions per
 * round trip (none with `enqueue` false).
 * Answers the action ids.
 */
export async function queueActions(
  bench: Bench,
  campaign: BenchCampaign,
  n: number,
  /** @defaultValue the run's `--participants`, every seeded participant */
  participants = bench.settings.participants,
  /**
   * False: the ledger rows alone, no job (for the bench to apply them itself).
   * @defaultValue true
   */
  enqueue = true,
): Promise<string[]> {
  const tag = randomBytes(4).toString('hex');
  const rows = await bench.sql<{ id: string }[]>`
    insert into loyalty_actions (id, campaign_id, participant_id, reward_id, status, metadata, created_at)
    select 'act_q' || ${tag} || lpad(g::text, 11, '0'), ${campaign.id},
      ${campaign.id} || 'p' || (g % ${participants}::int), ${campaign.rewardId}, 'QUEUED',
      jsonb_build_object('n', g), clock_timestamp()
    from generate_series(0, ${n}::int - 1) as g
    order by g
    returning id`;
  const ids = rows.map((r) => r.id);
  if (!enqueue) return ids;
  // As the API's accept path does: `loyalty-action-batch.apply` jobs of up to 64 actions, 1,000 actions a
  // round trip.
  for (let i = 0; i < ids.length; i += 1000) await enqueueActions(bench.queues, ids.slice(i, i + 1000));
  return ids;
}

/** The campaign's `loyaltyActionCount`, as the worker keeps it. */
export async function appliedCount(bench: Bench, campaignId: string): Promise<number> {
  const [row] = await bench.sql<
    { n: number }[]
  >`select loyalty_action_count as n from campaigns where id = ${campaignId}`;
  return row?.n ?? 0;
}
