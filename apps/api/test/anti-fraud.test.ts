import { manualClock, updateCampaign } from '@stampcard/core';
import {
  type AntiFraudSettings,
  campaigns,
  ipThrottles,
  participantRewards,
  participants,
} from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, expectErrorShape, overHttp, type Reply } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { refusals } from '../../../test/support/refused';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * Anti-fraud over HTTP, every reason code from a real request. The stack's clock is the test's, so the IP
 * throttle's hour and block's day are walked without waiting. The worker runs: an action unlocking a reward
 * shows whether the reward waits for approval.
 */
const clock = manualClock('2026-11-23T09:00:00.000Z');
const stack = useTestStack({ http: true, clock });
const expectRefused = refusals(stack);

type World = Awaited<ReturnType<typeof makeWorld>>;

const world = (antiFraud?: AntiFraudSettings) =>
  makeWorld(stack.ctx, { campaign: { antiFraud: antiFraud ?? null } });
const api = (w: World) => client(overHttp(stack.baseUrl!), w.key);
const add = (w: World, body: Record<string, unknown>) =>
  api(w).post(`/v1/campaign/${w.campaign.id}/participant`, body);
const trigger = (w: World, body: Record<string, unknown>) =>
  api(w).post(`/v1/campaign/${w.campaign.id}/loyalty-action`, { rewardId: w.reward.id, ...body });

const participantsOf = (w: World) =>
  stack.ctx.db.select().from(participants).where(eq(participants.campaignId, w.campaign.id));

/** The new participant's risk, as the API answered it. */
const risk = (r: Reply) => {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return [r.body.fraudRiskLevel, r.body.fraudReasonCode];
};

async function blockedBody(send: () => Promise<Reply>, reason: string) {
  const body = await expectRefused(send, 422, 'PARTICIPANT_BLOCKED');
  expect(body.fraudReasonCode).toBe(reason);
  expect(body.fraudRiskLevel).toBe('HIGH');
  return body;
}

describe('scoring a new participant (STANDARD, the default)', () => {
  it('UNIQUE_IDENTITY when nothing matches', async () => {
    const w = await world();
    expect(
      risk(await add(w, { email: uniqueEmail(), fingerprint: 'fp-a', ipAddress: '198.51.100.1' })),
    ).toEqual(['LOW', 'UNIQUE_IDENTITY']);
  });

  it('DUPLICATE_EMAIL after normalisation (case, +tag, gmail dots, googlemail): kept, HIGH', async () => {
    const w = await world();
    const first = await add(w, { email: 'jane.doe@gmail.com' });
    expect(risk(first)).toEqual(['LOW', 'UNIQUE_IDENTITY']);
    expect(risk(await add(w, { email: 'JaneDoe+promo@googlemail.com' }))).toEqual([
      'HIGH',
      'DUPLICATE_EMAIL',
    ]);
    expect(risk(await add(w, { email: 'bob+a@example.com' }))).toEqual(['LOW', 'UNIQUE_IDENTITY']);
    expect(risk(await add(w, { email: 'bob+b@example.com' }))).toEqual(['HIGH', 'DUPLICATE_EMAIL']);
    // Dots count outside gmail.
    expect(risk(await add(w, { email: 'b.ob@example.com' }))).toEqual(['LOW', 'UNIQUE_IDENTITY']);
  });

  it('DUPLICATE_IDENTITY for the same fingerprint and IP address', async () => {
    const w = await world();
    await add(w, { email: uniqueEmail(), fingerprint: 'fp-1', ipAddress: '203.0.113.5' });
    expect(
      risk(await add(w, { email: uniqueEmail(), fingerprint: 'fp-1', ipAddress: '203.0.113.5' })),
    ).toEqual(['HIGH', 'DUPLICATE_IDENTITY']);
    // IPv4-mapped IPv6 is the same address.
    expect(
      risk(await add(w, { email: uniqueEmail(), fingerprint: 'fp-1', ipAddress: '::ffff:203.0.113.5' })),
    ).toEqual(['HIGH', 'DUPLICATE_IDENTITY']);
  });

  it('SIMILAR_EMAIL, SIMILAR_FIRST_NAME, SIMILAR_LAST_NAME for the same fingerprint from another address: MEDIUM', async () => {
    const w = await world();
    await add(w, {
      email: 'jsmith@example.com',
      firstName: 'Jonathan',
      lastName: 'Whitaker',
      fingerprint: 'fp-2',
      ipAddress: '192.0.2.1',
    });
    const at = (n: number) => `192.0.2.${n}`;
    expect(
      risk(await add(w, { email: 'jsmith1@example.org', fingerprint: 'fp-2', ipAddress: at(2) })),
    ).toEqual(['MEDIUM', 'SIMILAR_EMAIL']);
    expect(
      risk(
        await add(w, {
          email: 'zed@example.com',
          firstName: 'Jonathon',
          fingerprint: 'fp-2',
          ipAddress: at(3),
        }),
      ),
    ).toEqual(['MEDIUM', 'SIMILAR_FIRST_NAME']);
    expect(
      risk(
        await add(w, {
          email: 'quinn@example.com',
          firstName: 'Maria',
          lastName: 'Whittaker',
          fingerprint: 'fp-2',
          ipAddress: at(4),
        }),
      ),
    ).toEqual(['MEDIUM', 'SIMILAR_LAST_NAME']);
    // Nothing alike: the shared fingerprint alone is no reason.
    expect(
      risk(
        await add(w, {
          email: 'ursula@example.com',
          firstName: 'Ursula',
          lastName: 'Kane',
          fingerprint: 'fp-2',
          ipAddress: at(5),
        }),
      ),
    ).toEqual(['LOW', 'UNIQUE_IDENTITY']);
  });

  it('an action that creates its participant is scored too', async () => {
    const w = await world({ level: 'STRICT' });
    await add(w, { email: 'kim@example.com' });
    const body = await blockedBody(
      () => trigger(w, { participantEmail: 'Kim+x@example.com' }),
      'DUPLICATE_EMAIL',
    );
    expect(body.matchedParticipantIds).toHaveLength(1);
  });

  it("a kept risky participant's rewards wait for manual approval; a LOW one's do not", async () => {
    const w = await world();
    await add(w, { email: 'ann@example.com' });
    const applied = async (email: string) => {
      const r = await api(w).post(`/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`, {
        participantEmail: email,
        rewardId: w.reward.id,
      });
      expect(r.body.action?.status, JSON.stringify(r.body)).toBe('APPLIED');
      const [p] = await stack.ctx.db.select().from(participants).where(eq(participants.email, email));
      const [reward] = await stack.ctx.db
        .select()
        .from(participantRewards)
        .where(eq(participantRewards.participantId, p!.id));
      return { risk: p!.fraudRiskLevel, approved: reward?.approved };
    };
    expect(await applied('ann+2@example.com')).toEqual({ risk: 'HIGH', approved: false });
    expect(await applied('ann@example.com')).toEqual({ risk: 'LOW', approved: true });
  });
});

describe('levels', () => {
  it('STRICT refuses every HIGH with 422 and stores nothing; MEDIUM is kept', async () => {
    const w = await world({ level: 'STRICT' });
    const first = await add(w, {
      email: 'lee@example.com',
      firstName: 'Leonard',
      fingerprint: 'fp-s',
      ipAddress: '192.0.2.10',
    });
    const firstId = first.body.id;
    const dupEmail = await blockedBody(() => add(w, { email: 'LEE+1@example.com' }), 'DUPLICATE_EMAIL');
    expect(dupEmail.matchedParticipantIds).toEqual([firstId]);
    const dupIdentity = await blockedBody(
      () => add(w, { email: uniqueEmail(), fingerprint: 'fp-s', ipAddress: '192.0.2.10' }),
      'DUPLICATE_IDENTITY',
    );
    expect(dupIdentity.matchedParticipantIds).toEqual([firstId]);
    expect(
      risk(
        await add(w, {
          email: uniqueEmail(),
          firstName: 'Leonardo',
          fingerprint: 'fp-s',
          ipAddress: '192.0.2.11',
        }),
      ),
    ).toEqual(['MEDIUM', 'SIMILAR_FIRST_NAME']);
  });

  it('OFF scores nothing and refuses only the blacklist', async () => {
    const w = await world({ level: 'OFF', blacklist: ['*@spam.example'] });
    await add(w, { email: 'max@example.com', fingerprint: 'fp-o', ipAddress: '192.0.2.20' });
    expect(
      risk(await add(w, { email: 'max+1@example.com', fingerprint: 'fp-o', ipAddress: '192.0.2.20' })),
    ).toEqual(['LOW', 'UNIQUE_IDENTITY']);
    await blockedBody(() => add(w, { email: 'x@spam.example' }), 'BLACKLIST_MATCH');
  });
});

describe('whitelist and blacklist', () => {
  it('refuse the blacklist by email (normalised), *@domain, domain, IP address and CIDR range', async () => {
    const w = await world({
      blacklist: [
        'bad.guy@gmail.com',
        '*@fraud.example',
        'scam.example',
        '198.51.100.66',
        '10.20.0.0/16',
        '2001:db8::/32',
      ],
    });
    await blockedBody(() => add(w, { email: 'BadGuy+1@googlemail.com' }), 'BLACKLIST_MATCH');
    await blockedBody(() => add(w, { email: 'a@fraud.example' }), 'BLACKLIST_MATCH');
    await blockedBody(() => add(w, { email: 'b@scam.example' }), 'BLACKLIST_MATCH');
    await blockedBody(() => add(w, { email: uniqueEmail(), ipAddress: '198.51.100.66' }), 'BLACKLIST_MATCH');
    await blockedBody(() => add(w, { email: uniqueEmail(), ipAddress: '10.20.30.40' }), 'BLACKLIST_MATCH');
    await blockedBody(() => add(w, { email: uniqueEmail(), ipAddress: '2001:db8::1' }), 'BLACKLIST_MATCH');
    // The same list refuses an action that would create the participant.
    await blockedBody(() => trigger(w, { participantEmail: 'c@fraud.example' }), 'BLACKLIST_MATCH');
    expect(risk(await add(w, { email: uniqueEmail(), ipAddress: '10.21.0.1' }))).toEqual([
      'LOW',
      'UNIQUE_IDENTITY',
    ]);
  });

  it('the whitelist wins over the blacklist and over every score: LOW, WHITELISTED', async () => {
    const w = await world({
      level: 'STRICT',
      whitelist: ['*@partner.example', '192.0.2.0/24'],
      blacklist: ['*@partner.example'],
    });
    expect(risk(await add(w, { email: 'a@partner.example' }))).toEqual(['LOW', 'WHITELISTED']);
    // A duplicate email would be refused under STRICT; whitelisted, it is let in.
    expect(risk(await add(w, { email: 'a+2@partner.example' }))).toEqual(['LOW', 'WHITELISTED']);
    expect(risk(await add(w, { email: uniqueEmail(), ipAddress: '192.0.2.200' }))).toEqual([
      'LOW',
      'WHITELISTED',
    ]);
  });
});

describe('IP throttle (new participants per IP address per hour; past it, blocked 24 h)', () => {
  it('refuses the creation past the limit and blocks the address for 24 h, then lets it in again', async () => {
    const w = await world({ ipThrottle: 3 });
    clock.advance(7 * 24 * 3_600_000);
    const from = (ip: string) => add(w, { email: uniqueEmail(), ipAddress: ip });
    for (let i = 0; i < 3; i++) expect((await from('198.51.100.30')).status).toBe(200);
    const before = await participantsOf(w);
    const crossing = await from('198.51.100.30');
    expect(expectErrorShape(crossing, 422, 'PARTICIPANT_BLOCKED')).toMatchObject({
      fraudRiskLevel: 'HIGH',
      fraudReasonCode: 'BLOCKED_IP',
      matchedParticipantIds: [],
    });
    // No participant, but the block itself is written.
    expect(await participantsOf(w)).toEqual(before);
    const [throttle] = await stack.ctx.db
      .select()
      .from(ipThrottles)
      .where(eq(ipThrottles.campaignId, w.campaign.id));
    expect(throttle).toMatchObject({ ipAddress: '198.51.100.30', count: 3 });
    expect(throttle!.blockedUntil!.getTime()).toBe(clock.now().getTime() + 24 * 3_600_000);
    // Blocked now, not merely counted: an hour later it is still refused, by email or action.
    clock.advance(3_600_000);
    await blockedBody(() => from('198.51.100.30'), 'BLOCKED_IP');
    await blockedBody(
      () => trigger(w, { participantEmail: uniqueEmail(), ipAddress: '198.51.100.30' }),
      'BLOCKED_IP',
    );
    // Other addresses, and the same address in another campaign, are not concerned.
    expect((await from('198.51.100.31')).status).toBe(200);
    const other = await world({ ipThrottle: 3 });
    expect((await add(other, { email: uniqueEmail(), ipAddress: '198.51.100.30' })).status).toBe(200);
    // The block ends 24 h after it began.
    clock.advance(23 * 3_600_000 - 1000);
    await blockedBody(() => from('198.51.100.30'), 'BLOCKED_IP');
    clock.advance(1000);
    expect((await from('198.51.100.30')).status).toBe(200);
  });

  it('counts per hour: a new window starts an hour after the first creation of the last', async () => {
    const w = await world({ ipThrottle: 2 });
    clock.advance(7 * 24 * 3_600_000);
    const from = () => add(w, { email: uniqueEmail(), ipAddress: '198.51.100.40' });
    expect((await from()).status).toBe(200);
    expect((await from()).status).toBe(200);
    clock.advance(3_600_000);
    expect((await from()).status).toBe(200);
    expect((await from()).status).toBe(200);
  });

  it('counts only participants created: an existing email, or a refusal, counts nothing', async () => {
    const w = await world({ ipThrottle: 2, blacklist: ['*@spam.example'] });
    clock.advance(7 * 24 * 3_600_000);
    const email = uniqueEmail();
    expect((await add(w, { email, ipAddress: '198.51.100.50' })).status).toBe(200);
    for (let i = 0; i < 3; i++)
      expect((await add(w, { email, ipAddress: '198.51.100.50' })).status).toBe(200);
    for (let i = 0; i < 3; i++)
      await blockedBody(
        () => add(w, { email: `${i}@spam.example`, ipAddress: '198.51.100.50' }),
        'BLACKLIST_MATCH',
      );
    expect((await add(w, { email: uniqueEmail(), ipAddress: '198.51.100.50' })).status).toBe(200);
  });

  it('20 concurrent creations from one address admit exactly the limit', async () => {
    const w = await world({ ipThrottle: 10 });
    clock.advance(7 * 24 * 3_600_000);
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2
          ? add(w, { email: uniqueEmail(`burst${i}`), ipAddress: '203.0.113.77' })
          : trigger(w, { participantEmail: uniqueEmail(`burst${i}`), ipAddress: '203.0.113.77' }),
      ),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(10);
    for (const r of replies.filter((r) => r.status !== 200)) {
      expect(expectErrorShape(r, 422, 'PARTICIPANT_BLOCKED').fraudReasonCode).toBe('BLOCKED_IP');
    }
    const rows = await stack.ctx.db
      .select()
      .from(participants)
      .where(eq(participants.campaignId, w.campaign.id));
    expect(rows).toHaveLength(10);
    // The counters follow the rows: refused creations counted nothing.
    const [campaign] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, w.campaign.id));
    expect(campaign?.participantCount).toBe(10);
  });

  it('a campaign can turn the throttle off (ipThrottle 0)', async () => {
    const w = await world({ ipThrottle: 0 });
    for (let i = 0; i < 12; i++)
      expect((await add(w, { email: uniqueEmail(), ipAddress: '198.51.100.60' })).status).toBe(200);
  });
});

describe('a refusal', () => {
  it('stores nothing, counts nothing, and leaves the quota untouched', async () => {
    const w = await makeWorld(stack.ctx, {
      account: { participantQuota: 1 },
      campaign: { antiFraud: { blacklist: ['*@spam.example'] } },
    });
    await blockedBody(() => add(w, { email: 'a@spam.example' }), 'BLACKLIST_MATCH');
    await blockedBody(() => trigger(w, { participantEmail: 'b@spam.example' }), 'BLACKLIST_MATCH');
    // The one place of the quota is still free.
    expect((await add(w, { email: uniqueEmail() })).status).toBe(200);
  });

  it('a setting changed on the campaign applies to the next creation', async () => {
    const w = await world();
    await add(w, { email: 'sam@example.com' });
    expect(risk(await add(w, { email: 'sam+1@example.com' }))).toEqual(['HIGH', 'DUPLICATE_EMAIL']);
    await updateCampaign(stack.ctx, w.campaign.id, { antiFraud: { level: 'STRICT' } });
    await blockedBody(() => add(w, { email: 'sam+2@example.com' }), 'DUPLICATE_EMAIL');
  });
});

describe('the operator sets the lists', () => {
  it('refuses an entry that is no email, domain, address or range: 400 naming it, nothing written', async () => {
    const w = await world();
    const op = client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
    const body = await expectRefused(
      () =>
        op.patch(`/admin/v1/campaigns/${w.campaign.id}`, {
          antiFraud: { blacklist: ['ok@example.com', 'no way'] },
        }),
      400,
      'VALIDATION_ERROR',
    );
    expect(body.errors[0]).toMatchObject({ param: 'antiFraud.blacklist.1', value: 'no way' });
    const ok = await op.patch(`/admin/v1/campaigns/${w.campaign.id}`, {
      antiFraud: {
        whitelist: ['*@partner.example', '10.0.0.0/8', '2001:db8::1'],
        blacklist: ['spam.example'],
      },
    });
    expect(ok.status).toBe(200);
  });
});
