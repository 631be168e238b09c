import { connectPostgres, runMigrations } from '@stampcard/db';
import { afterAll, describe, expect, it } from 'vitest';
import { consoleSession } from '../support/console';
import { type OwnPostgres, startOwnPostgres } from '../support/own-postgres';
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
 * Scenario 3: a PostgreSQL of the scenario's own restarted, then frozen (SIGSTOP: connections open, nothing
 * answers) while actions arrive. While it is away the API answers 503 within its request deadline, never
 * hangs; no action is half-applied; every role comes back by itself, none restarted.
 */
const REQUEST_TIMEOUT_MS = 2000;
const STATEMENT_TIMEOUT_MS = 1000;
let pg: OwnPostgres | undefined;
const stack = useChaosStack({
  databaseUrl: () => pg!.url('stampcard'),
  env: {
    REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
  },
});
afterAll(() => pg?.destroy());

describe('chaos: PostgreSQL restarted and frozen under load', () => {
  it('answers fast 503s while it is away, half-applies nothing, and comes back without a restart', async () => {
    pg = await startOwnPostgres();
    const admin = connectPostgres(pg.url('postgres'), {
      max: 1,
      onnotice: () => {},
    });
    await admin.unsafe('create database stampcard');
    await admin.end({ timeout: 1 });
    await runMigrations(pg.url('stampcard'));
    const roles = [await stack.start('api'), await stack.start('worker'), await stack.start('dispatcher')];
    const p = await chaosProgram(stack, { conversionsRequired: 3, isUnlimited: true });
    // An operator's console open through it all: its pages too answer fast while PostgreSQL is frozen.
    const { cookie } = await consoleSession(stack.baseUrl, stack.token);
    let frozenConsole: Awaited<ReturnType<typeof probeConsole>> = [];
    const result = await load(stack, p, {
      total: 6000,
      concurrency: 8,
      participants: 300,
      during: async () => {
        await sleep(2000);
        pg!.restart();
        await sleep(3000);
        pg!.freeze();
        await sleep(1000);
        const probed = Date.now();
        frozenConsole = await probeConsole(stack, cookie);
        await sleep(Math.max(0, 5000 - (Date.now() - probed)));
        pg!.thaw();
      },
    });
    const backMs = await until(
      async () => (await fetch(`${stack.baseUrl}/ready`).catch(() => null))?.status === 200,
      30_000,
      'ready again',
    );
    const recoveryMs = await until(
      async () =>
        (await ledgerFigures(stack.sql, p.campaignId, result.accepted, result.uncertain)).queued === 0,
      120_000,
      'every accepted action applied',
      () => whyStuck(stack, p.campaignId),
    );
    const figures = await ledgerFigures(stack.sql, p.campaignId, result.accepted, result.uncertain);
    const backConsole = await probeConsole(stack, cookie);
    const [rewards] = await stack.sql<{ off: number }[]>`
      select count(*) filter (where held <> p.loyalty_action_count / 3)::int as off
      from participants p
      cross join lateral (select count(*)::int as held from participant_rewards r where r.participant_id = p.id) h
      where p.campaign_id = ${p.campaignId}`;
    const unavailable = [...result.answers].filter(([k]) => k.startsWith('503'));
    report('postgres', {
      ...figures,
      rewardsOff: rewards!.off,
      readyAfterThawMs: backMs,
      recoveryMs,
      answers: result.answers,
      consoleFrozen: frozenConsole.map((a) => `${a.page} ${a.status} ${a.ms}ms`).join(', '),
    });
    // Every role is the one started: none died.
    for (const run of roles) expect(run.child.exitCode, run.output().slice(-2000)).toBeNull();
    expect(unavailable.reduce((n, [, a]) => n + a.count, 0)).toBeGreaterThan(0);
    // Within the deadline, or, for a COMMIT already sent, the statement timeout and its margin after it.
    for (const [status, a] of unavailable) {
      expect(a.maxMs, status).toBeLessThan(REQUEST_TIMEOUT_MS + STATEMENT_TIMEOUT_MS + 1000 + 1500);
    }
    expect([...result.answers.keys()].filter((k) => !/^(200|503)/.test(k))).toEqual([]);
    expect(figures).toMatchObject({ lost: 0, doubled: 0, unknown: 0, queued: 0 });
    expect(rewards!.off).toBe(0);
    // The console's pages: a 503 page within the same bounds while PostgreSQL is frozen, never a 500 or a hang;
    // each page again once it is back.
    expect(frozenConsole.map((a) => a.status)).toEqual(CONSOLE_PAGES.map(() => '503'));
    for (const a of frozenConsole)
      expect(a.ms, a.page).toBeLessThan(REQUEST_TIMEOUT_MS + STATEMENT_TIMEOUT_MS + 2500);
    expect(backConsole.map((a) => a.status)).toEqual(CONSOLE_PAGES.map(() => '200'));
  }, 300_000);
});
