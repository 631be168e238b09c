import { ipThrottles, participants } from '@stampcard/db';
import { type SQL, sql } from 'drizzle-orm';
import { type Ctx, commitWrite } from '../../context';
import { DomainError } from '../../errors';
import {
  antiFraudLevel,
  emailKey,
  type FraudCandidate,
  type FraudSubject,
  type FraudVerdict,
  IP_BLOCK_MS,
  IP_THROTTLE_WINDOW_MS,
  ipThrottleOf,
  listVerdict,
  normalizeIp,
  scoreParticipant,
} from '../../rules/fraud';
import type { CampaignRow } from '../../serialize';

/** Others a new participant is compared with, at most: the look-up stays one bounded index read. */
const MAX_CANDIDATES = 50;

/** The 422 of a refused creation: the verdict's fields at the top of the error body. */
export function participantBlocked(v: FraudVerdict): DomainError {
  const why: Record<string, string> = {
    BLACKLIST_MATCH: "its email or IP address is on the campaign's blacklist",
    BLOCKED_IP:
      'its IP address brought too many new participants to this campaign and is blocked for 24 hours',
    DUPLICATE_EMAIL: 'another participant has the same email (after normalisation)',
    DUPLICATE_IDENTITY: 'another participant has the same fingerprint and IP address',
  };
  return new DomainError(
    'PARTICIPANT_BLOCKED',
    `Participant blocked by anti-fraud: ${why[v.fraudReasonCode] ?? v.fraudReasonCode}`,
    {
      fraudRiskLevel: v.fraudRiskLevel,
      fraudReasonCode: v.fraudReasonCode,
      matchedParticipantIds: v.matchedParticipantIds,
    },
  );
}

/** Addresses to block once the refused creation's transaction has rolled back (see `blockAfterRefusal`). */
const pendingBlocks = new WeakMap<DomainError, { campaignId: string; ipAddress: string }>();

/** What scoring needs before the insert, in one statement. */
export type FraudLookup = {
  /** The campaign's participant with exactly this email, if there is one: not a creation, nothing scored. */
  existingId: string | null;
  others: FraudCandidate[];
  blockedUntil: Date | null;
};

/**
 * One indexed statement: the campaign's participants sharing the new one's email key or fingerprint (at most
 * 50), and whether its IP address is blocked. Its cost does not grow with the campaign (`npm run bench:fraud`).
 */
export function fraudLookupStatement(campaignId: string, subject: FraudSubject): SQL {
  const email = subject.email.trim().toLowerCase();
  const ip = subject.ipAddress ? normalizeIp(subject.ipAddress) : null;
  return sql`
    select p.*, (
      select t.blocked_until from ${ipThrottles} t where t.campaign_id = ${campaignId} and t.ip_address = ${ip}
    ) as blocked_until
    from (select 1) as one
    left join lateral (
      select id, email, email_key, first_name, last_name, ip_address, fingerprint from ${participants}
      where campaign_id = ${campaignId}
        and (email_key = ${emailKey(subject.email)} or email = ${email} or fingerprint = ${subject.fingerprint ?? null})
      limit ${MAX_CANDIDATES}
    ) as p on true`;
}

type LookupRow = {
  id: string | null;
  email: string | null;
  email_key: string | null;
  first_name: string | null;
  last_name: string | null;
  ip_address: string | null;
  fingerprint: string | null;
  blocked_until: string | null;
};

/** A subject's look-up from the rows its statement answered. */
function lookupOf(subject: FraudSubject, rows: readonly LookupRow[]): FraudLookup {
  const email = subject.email.trim().toLowerCase();
  const others: FraudCandidate[] = [];
  let existingId: string | null = null;
  for (const r of rows) {
    if (r.id === null) continue;
    if (r.email === email) existingId = r.id;
    others.push({
      id: r.id,
      emailKey: r.email_key,
      firstName: r.first_name,
      lastName: r.last_name,
      ipAddress: r.ip_address,
      fingerprint: r.fingerprint,
    });
  }
  const blocked = rows[0]?.blocked_until;
  return { existingId, others, blockedUntil: blocked ? new Date(blocked) : null };
}

/** Runs `fraudLookupStatement`. */
export async function fraudLookup(
  ctx: Ctx,
  campaign: CampaignRow,
  subject: FraudSubject,
): Promise<FraudLookup> {
  return lookupOf(subject, await ctx.db.execute<LookupRow>(fraudLookupStatement(campaign.id, subject)));
}

/**
 * `fraudLookup` for many subjects in one statement (an import's batch): each subject's look-up as the single
 * one would answer it, by the same indexed reads, at most 50 others each.
 */
export async function fraudLookups(
  ctx: Ctx,
  campaign: CampaignRow,
  subjects: readonly FraudSubject[],
): Promise<FraudLookup[]> {
  if (subjects.length === 0) return [];
  const list = subjects.map((s) => ({
    key: emailKey(s.email),
    email: s.email.trim().toLowerCase(),
    fp: s.fingerprint ?? null,
    ip: s.ipAddress ? normalizeIp(s.ipAddress) : null,
  }));
  const rows = await ctx.db.execute<LookupRow & { i: number }>(sql`
    select s.i::int as i, p.*, (
      select t.blocked_until from ${ipThrottles} t where t.campaign_id = ${campaign.id} and t.ip_address = s.ip
    ) as blocked_until
    from rows from (jsonb_to_recordset(${JSON.stringify(list)}::jsonb) as (key text, email text, fp text, ip text))
      with ordinality as s(key, email, fp, ip, i)
    left join lateral (
      select id, email, email_key, first_name, last_name, ip_address, fingerprint from ${participants}
      where campaign_id = ${campaign.id} and (email_key = s.key or email = s.email or fingerprint = s.fp)
      limit ${MAX_CANDIDATES}
    ) as p on true`);
  const bySubject: LookupRow[][] = subjects.map(() => []);
  for (const r of rows) bySubject[r.i - 1]!.push(r);
  return subjects.map((s, i) => lookupOf(s, bySubject[i]!));
}

/**
 * The verdict on a new participant before it is written: lists, a blocked address, then the score. A
 * refusal throws 422 PARTICIPANT_BLOCKED.
 */
export function judge(
  campaign: CampaignRow,
  subject: FraudSubject,
  lookup: FraudLookup,
  now: Date,
): FraudVerdict & { throttled: boolean } {
  const settings = campaign.antiFraud;
  const level = antiFraudLevel(settings);
  const listed = listVerdict(settings, subject);
  if (listed?.refused) throw participantBlocked(listed);
  if (listed) return { ...listed, throttled: false };
  if (level === 'OFF') return { ...scoreParticipant('OFF', subject, []), throttled: false };
  if (lookup.blockedUntil && lookup.blockedUntil > now) {
    throw participantBlocked({
      fraudRiskLevel: 'HIGH',
      fraudReasonCode: 'BLOCKED_IP',
      matchedParticipantIds: [],
      refused: true,
    });
  }
  const score = scoreParticipant(level, subject, lookup.others);
  if (score.refused) throw participantBlocked(score);
  return { ...score, throttled: Boolean(subject.ipAddress) && ipThrottleOf(settings) > 0 };
}

/**
 * Counts a new participant against its address's hourly throttle, in the creating transaction (the row's
 * lock serialises concurrent creations from one address, so the count is exact, and a creation that rolls
 * back counts nothing). Past the campaign's `ipThrottle`, the creation is refused and the address is to be
 * blocked for 24 h: `blockAfterRefusal` writes that once the transaction has rolled back.
 */
export async function countForThrottle(ctx: Ctx, campaign: CampaignRow, ipAddress: string): Promise<void> {
  const now = ctx.clock.now();
  const ip = normalizeIp(ipAddress);
  const windowFrom = new Date(now.getTime() - IP_THROTTLE_WINDOW_MS);
  const [row] = await ctx.db.execute<{ count: number; blocked_until: string | null }>(sql`
    insert into ${ipThrottles} as t (campaign_id, ip_address, window_start, count)
    values (${campaign.id}, ${ip}, ${now.toISOString()}::timestamptz, 1)
    on conflict (campaign_id, ip_address) do update set
      window_start = case when t.window_start <= ${windowFrom.toISOString()}::timestamptz
        then ${now.toISOString()}::timestamptz else t.window_start end,
      count = case when t.window_start <= ${windowFrom.toISOString()}::timestamptz then 1 else t.count + 1 end,
      blocked_until = case when t.blocked_until <= ${now.toISOString()}::timestamptz then null else t.blocked_until end
    returning count, blocked_until`);
  const blockedUntil = row?.blocked_until ? new Date(row.blocked_until) : null;
  const overLimit = (row?.count ?? 0) > ipThrottleOf(campaign.antiFraud);
  if (!overLimit && !(blockedUntil && blockedUntil > now)) return;
  const err = participantBlocked({
    fraudRiskLevel: 'HIGH',
    fraudReasonCode: 'BLOCKED_IP',
    matchedParticipantIds: [],
    refused: true,
  });
  if (overLimit) pendingBlocks.set(err, { campaignId: campaign.id, ipAddress: ip });
  throw err;
}

/**
 * Runs a creation; when it was refused for passing the IP throttle, blocks the address for 24 h in a
 * statement of its own (the creation's transaction rolled back, and with it everything it counted).
 */
export async function blockAfterRefusal<T>(ctx: Ctx, create: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (err) {
    const block = err instanceof DomainError ? pendingBlocks.get(err) : undefined;
    if (block) {
      const now = ctx.clock.now();
      const until = new Date(now.getTime() + IP_BLOCK_MS);
      // Like any write of the request: not sent once its caller stopped waiting, tracked while in flight.
      await commitWrite(ctx, (w) =>
        w.db.execute(sql`
        insert into ${ipThrottles} as t (campaign_id, ip_address, window_start, count, blocked_until)
        values (${block.campaignId}, ${block.ipAddress}, ${now.toISOString()}::timestamptz, 0, ${until.toISOString()}::timestamptz)
        on conflict (campaign_id, ip_address)
        do update set blocked_until = greatest(t.blocked_until, ${until.toISOString()}::timestamptz)`),
      );
    }
    throw err;
  }
}
