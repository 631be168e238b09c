import { afterAll, describe, expect, it } from 'vitest';
import { consoleSession } from '../support/console';
import { type OwnRedis, ownRedis } from '../support/own-redis';
import {
  CONSOLE_PAGES,
  chaosProgram,
  ledgerFigures,
  load,
  probeConsole,
  report,
  sleep,
  until,
  useChaosStack,
  whyStuck,
} from './support';

/**
 * Scenario 2: the scenario's own Redis killed and started again empty (every queue and job gone) while actions
 * arrive, then stopped for a minute (`CHAOS_REDIS_DOWN_S`, default 60). PostgreSQL is the record: every action
 * answered 2xx is applied once Redis is back (the relay queues what the queues lost), and while Redis is away
 * the API still accepts actions (limits fail open), each answer within its request deadline.
 */
const REQUEST_TIMEOUT_MS = 2000;
const DOWN_S = Number(process.env.CHAOS_REDIS_DOWN_S ?? 60);
let redis: OwnRedis | undefined;
const stack = useChaosStack({
  redisUrl: () => redis!.url,
  env: { REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), RATE_LIMIT_TIMEOUT_MS: '100' },
});
afterAll(async () => {
  await redis?.stop();
});

describe('chaos: Redis emptied and stopped under load', () => {
  it('loses no accepted action, answers while it is away within the deadline, and catches up', async () => {
    redis = await ownRedis();
    const roles = [await stack.start('api'), await stack.start('worker')];
    const p = await chaosProgram(stack, { conversionsRequired: 4, isUnlimited: true });
    // An operator's console open through it all: PostgreSQL holds what its pages show, so they still answer.
    const { cookie } = await consoleSession(stack.baseUrl, stack.token);
    let downConsole: Awaited<ReturnType<typeof probeConsole>> = [];
    let stopping = false;
    const phases: Record<string, number> = {};
    const downAnswers = {
      ok: 0,
      other: 0,
      maxMs: 0,
      byStatus: new Map<string, { count: number; maxMs: number }>(),
    };
    let backAt = 0;
    const downAccepted: string[] = [];
    const downUncertain: string[] = [];
    const result = await load(stack, p, {
      total: Number.POSITIVE_INFINITY,
      concurrency: 8,
      participants: 300,
      pauseMs: 20,
      stop: () => stopping,
      during: async () => {
        await sleep(2000);
        await redis!.stop();
        await redis!.start(); // empty: no queue, no job, no limit left
        phases.emptiedAt = Math.round(performance.now());
        await sleep(4000);
        await redis!.stop();
        const down = await load(stack, p, {
          tag: 'while-down',
          total: Number.POSITIVE_INFINITY,
          concurrency: 2,
          participants: 300,
          pauseMs: 200,
          stop: () => !redis || backAt > 0,
          during: async () => {
            await sleep(2000);
            downConsole = await probeConsole(stack, cookie);
            await sleep(Math.max(0, DOWN_S * 1000 - 2000));
            await redis!.start();
            backAt = performance.now();
          },
        });
        downAccepted.push(...down.accepted);
        downUncertain.push(...down.uncertain);
        for (const [status, a] of down.answers) {
          downAnswers.byStatus.set(status, a);
          if (status === '200') downAnswers.ok += a.count;
          else downAnswers.other += a.count;
          downAnswers.maxMs = Math.max(downAnswers.maxMs, a.maxMs);
        }
        await sleep(3000);
        stopping = true;
      },
    });
    result.accepted.push(...downAccepted);
    result.uncertain.push(...downUncertain);
    const recoveryMs = await until(
      async () =>
        (await ledgerFigures(stack.sql, p.campaignId, result.accepted, result.uncertain)).queued === 0,
      120_000,
      'every accepted action applied',
      () => whyStuck(stack, p.campaignId),
    );
    const figures = await ledgerFigures(stack.sql, p.campaignId, result.accepted, result.uncertain);
    report('redis', {
      ...figures,
      downS: DOWN_S,
      acceptedWhileDown: downAnswers.ok,
      otherWhileDown: downAnswers.other,
      answersWhileDown: downAnswers.byStatus,
      slowestWhileDownMs: downAnswers.maxMs,
      recoveryMs,
      answers: result.answers,
      consoleDown: downConsole.map((a) => `${a.page} ${a.status} ${a.ms}ms`).join(', '),
    });
    for (const run of roles) expect(run.child.exitCode, run.output().slice(-2000)).toBeNull();
    expect(downAnswers.ok).toBeGreaterThan(0);
    // While Redis is away actions are accepted (limits fail open, the ledger is in PostgreSQL); any other
    // answer is one the contract documents (a 4xx, or a 503 that says what was written), never a 500 or none.
    expect([...downAnswers.byStatus.keys()].filter((k) => !/^(2\d\d|4\d\d|503)/.test(k))).toEqual([]);
    expect(downAnswers.maxMs).toBeLessThan(REQUEST_TIMEOUT_MS + 1500);
    expect(figures).toMatchObject({ lost: 0, doubled: 0, unknown: 0, queued: 0 });
    expect(downConsole.map((a) => a.status)).toEqual(CONSOLE_PAGES.map(() => '200'));
    for (const a of downConsole) expect(a.ms, a.page).toBeLessThan(REQUEST_TIMEOUT_MS + 1500);
  }, 300_000);
});
