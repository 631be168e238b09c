import { describe, expect, it } from 'vitest';
import { chaosProgram, ledgerFigures, load, report, until, useChaosStack, whyStuck } from './support';

/**
 * Scenario 5: 1,000 actions at once for one participant on a `limit: 1` reward, and 1,000 at once from 1,000
 * participants on a reward with a `PER_MONTH` cap of 5 winners, applied by two worker processes: one reward,
 * five winners, never more.
 */
const stack = useChaosStack();
const RACERS = 1000;
const WINNERS = 5;

describe('chaos: concurrent actions racing reward limits', () => {
  it('never over-awards a limit-1 reward nor a PER_MONTH winners cap', async () => {
    await stack.start('api');
    await stack.start('worker');
    await stack.start('worker');
    const p = await chaosProgram(stack, { conversionsRequired: 1, limit: 1 });
    const capped = await p.op.post(`/admin/v1/campaigns/${p.campaignId}/rewards`, {
      title: 'Monthly prize',
      conversionsRequired: 1,
      limit: 1,
      limitDuration: 'PER_MONTH',
      numberOfWinners: WINNERS,
    });
    expect(capped.status).toBe(200);
    // A thousand connections at once on two cores: on a slow machine the last answers come after 10 s (they
    // wait to be read before their request's deadline starts). Each caller waits for its answer, so that every
    // action written is known to it and the figures below count them all.
    const racing = { total: RACERS, concurrency: RACERS, timeoutMs: 60_000 };
    const one = await load(stack, p, { ...racing, participants: 1 });
    const many = await load(stack, { ...p, rewardId: capped.body.id }, { ...racing, participants: RACERS });
    const accepted = [...one.accepted, ...many.accepted];
    const recoveryMs = await until(
      async () => (await ledgerFigures(stack.sql, p.campaignId, accepted)).queued === 0,
      120_000,
      'every racing action applied',
      () => whyStuck(stack, p.campaignId),
    );
    const figures = await ledgerFigures(stack.sql, p.campaignId, accepted);
    const [limited] = await stack.sql<{ n: number }[]>`
      select count(*)::int as n from participant_rewards where reward_id = ${p.rewardId}`;
    const [winners] = await stack.sql<{ n: number }[]>`
      select count(distinct participant_id)::int as n from participant_rewards where reward_id = ${capped.body.id}`;
    report('race', {
      ...figures,
      limitOneRewards: limited!.n,
      perMonthWinners: winners!.n,
      recoveryMs,
      answersLimitOne: one.answers,
      answersPerMonth: many.answers,
    });
    // A thousand at once on two cores: some are refused 503 (nothing written, as documented); enough race.
    expect(one.accepted.length).toBeGreaterThan(RACERS / 10);
    expect(many.accepted.length).toBeGreaterThan(RACERS / 10);
    expect(figures).toMatchObject({ lost: 0, doubled: 0, unknown: 0, queued: 0 });
    expect(limited!.n).toBe(1);
    expect(winners!.n).toBe(WINNERS);
  }, 240_000);
});
