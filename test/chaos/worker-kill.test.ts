import { describe, expect, it } from 'vitest';
import { chaosProgram, ledgerFigures, load, report, sleep, until, useChaosStack, whyStuck } from './support';

/**
 * Scenario 1: the worker killed with SIGKILL every few seconds while 20,000 actions arrive. Every action
 * answered 2xx is in the ledger and applied exactly once, each participant's counter is the sum of its ledger,
 * and its rewards are what the unlock rule gives for that count.
 */
const stack = useChaosStack();
const TOTAL = 20_000;
const PARTICIPANTS = 500;
const PER_REWARD = 5;
const LIMIT = 3;

describe('chaos: worker kill -9 under load', () => {
  it('applies every accepted action exactly once, counters and rewards as the ledger says', async () => {
    await stack.start('api');
    await stack.start('worker');
    const p = await chaosProgram(stack, { conversionsRequired: PER_REWARD, limit: LIMIT });
    let kills = 0;
    const started = performance.now();
    const result = await load(stack, p, {
      total: TOTAL,
      concurrency: 32,
      participants: PARTICIPANTS,
      during: async (progress) => {
        while (progress() < 0.95) {
          await sleep(2500);
          for (const worker of stack.running('worker')) await stack.kill(worker);
          kills++;
          await stack.start('worker');
        }
      },
    });
    const loadS = (performance.now() - started) / 1000;
    const recoveryMs = await until(
      async () => (await ledgerFigures(stack.sql, p.campaignId, result.accepted)).queued === 0,
      120_000,
      'every accepted action applied',
      () => whyStuck(stack, p.campaignId),
    );
    const figures = await ledgerFigures(stack.sql, p.campaignId, result.accepted);
    const [rewards] = await stack.sql<{ off: number; total: number }[]>`
      select count(*) filter (where held <> least(${LIMIT}, p.loyalty_action_count / ${PER_REWARD}))::int as off,
        coalesce(sum(held), 0)::int as total
      from participants p
      cross join lateral (select count(*)::int as held from participant_rewards r where r.participant_id = p.id) h
      where p.campaign_id = ${p.campaignId}`;
    report('worker-kill', {
      ...figures,
      kills,
      loadS: loadS.toFixed(1),
      rewards: rewards!.total,
      rewardsOff: rewards!.off,
      recoveryMs,
      answers: result.answers,
    });
    expect(kills).toBeGreaterThanOrEqual(2);
    expect(figures.accepted).toBe(TOTAL);
    expect(figures).toMatchObject({ lost: 0, doubled: 0, unknown: 0, queued: 0 });
    expect(rewards!.off).toBe(0);
  }, 240_000);
});
