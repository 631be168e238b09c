import { sql } from 'drizzle-orm';
import type { Database, Tx } from './client';
import { IDEMPOTENCY_TTL_MS, idempotencyKeys } from './schema/idempotency';

export type IdempotencyRow = typeof idempotencyKeys.$inferSelect;

/** A claim's row: the key, the day it started (its partition) and the token of the claim. */
export type IdempotencyClaimed = {
  scope: string;
  key: string;
  /** A token of this claim only: `recordIdempotentAnswer` and `releaseIdempotencyKey` act on it alone. */
  claimToken: string;
  /** When the request started: the claim's row lies in this day's partition. */
  startedAt: Date;
};

export type IdempotencyClaim = IdempotencyClaimed & {
  requestHash: string;
  method: string;
  path: string;
  lockedUntil: Date;
  expiresAt: Date;
};

/** A row as `to_jsonb` spells it (timestamps as ISO strings). */
type RowJson = { [column: string]: unknown };

const rowOf = (j: RowJson): IdempotencyRow => ({
  scope: j.scope as string,
  key: j.key as string,
  requestHash: j.request_hash as string,
  method: j.method as string,
  path: j.path as string,
  state: j.state as IdempotencyRow['state'],
  claimToken: j.claim_token as string,
  responseStatus: j.response_status as number | null,
  responseContentType: j.response_content_type as string | null,
  responseHeaders: j.response_headers as Record<string, string> | null,
  responseBody: j.response_body as string | null,
  subjects: j.subjects as string[] | null,
  startedAt: new Date(j.started_at as string),
  lockedUntil: new Date(j.locked_until as string),
  expiresAt: new Date(j.expires_at as string),
});

/**
 * Claims a key: a new row when no live row holds it, or in place of a `RUNNING` claim of the same request
 * whose `lockedUntil` has passed (its process died). Answers `claimed`, or the row that holds the key (another
 * request, one still running, or an answer to replay).
 *
 * The rows are partitioned by day, so no unique index can see a key's rows of two days at once: a transaction
 * locks the key (`pg_advisory_xact_lock` on its hash), then one statement reads the key's live row (the newest
 * started in the last 24 h: today's partition or yesterday's), and inserts the claim's row when there is none,
 * or deletes a dead claim's row and inserts in its place. The statement's snapshot is taken after the lock is
 * granted, so it sees every claim of the key made before. The lock, the statement and the commit go to
 * PostgreSQL pipelined: one round trip more than an unlocked `INSERT`. Claims of one key run one after the
 * other; claims of other keys never wait on each other (but for a hash collision, which only makes one wait).
 */
export async function claimIdempotencyKey(
  db: Database,
  claim: IdempotencyClaim,
): Promise<{ claimed: true } | { claimed: false; row: IdempotencyRow }> {
  const now = claim.startedAt.toISOString();
  const since = new Date(claim.startedAt.getTime() - IDEMPOTENCY_TTL_MS).toISOString();
  const [, [result]] = await db.$client.begin((tx) => [
    tx`select pg_advisory_xact_lock(hashtextextended(${`${claim.scope}\n${claim.key}`}, 0))`,
    tx<{ claimed: number; held: RowJson | string | null }[]>`
      with live as (
        select * from idempotency_keys
        where scope = ${claim.scope} and key = ${claim.key}
          and started_at > ${since}::timestamptz and expires_at > ${now}::timestamptz
        order by started_at desc
        limit 1
      ), lapsed as (
        delete from idempotency_keys k using live
        where k.scope = live.scope and k.key = live.key and k.started_at = live.started_at
          and live.state = 'RUNNING' and live.locked_until <= ${now}::timestamptz
          and live.request_hash = ${claim.requestHash}
        returning 1
      ), made as (
        insert into idempotency_keys (scope, key, request_hash, method, path, state, claim_token, started_at,
          locked_until, expires_at)
        select ${claim.scope}, ${claim.key}, ${claim.requestHash}, ${claim.method}, ${claim.path}, 'RUNNING',
          ${claim.claimToken}, ${now}::timestamptz, ${claim.lockedUntil.toISOString()}::timestamptz,
          ${claim.expiresAt.toISOString()}::timestamptz
        where not exists (select 1 from live) or exists (select 1 from lapsed)
        returning 1
      )
      select (select count(*) from made)::int as claimed, (select to_jsonb(live) from live) as held`,
  ]);
  if (result!.claimed > 0) return { claimed: true };
  const held = typeof result!.held === 'string' ? (JSON.parse(result!.held) as RowJson) : result!.held!;
  return { claimed: false, row: rowOf(held) };
}

export type IdempotentAnswer = {
  status: number;
  contentType: string | null;
  headers: Record<string, string>;
  body: string;
  /** The participants the answer shows, by id (erasing one scrubs this answer); empty: none. */
  subjects: string[];
};

/**
 * The claim's request answered: the row becomes `DONE` with the answer to replay, until it expires. Like the
 * claim, a statement of postgres.js's own, prepared once per connection: drizzle sends its statements
 * unprepared, and planning one over a partitioned table cost as much again as running it.
 */
export async function recordIdempotentAnswer(
  db: Database,
  where: IdempotencyClaimed,
  answer: IdempotentAnswer,
): Promise<boolean> {
  const done = await db.$client`
    update idempotency_keys
    set state = 'DONE', response_status = ${answer.status}, response_content_type = ${answer.contentType},
      response_headers = ${JSON.stringify(answer.headers)}::jsonb, response_body = ${answer.body},
      subjects = ${answer.subjects.length > 0 ? answer.subjects : null}::text[]
    where scope = ${where.scope} and key = ${where.key}
      and started_at = ${where.startedAt.toISOString()}::timestamptz and claim_token = ${where.claimToken}
      and state = 'RUNNING'
    returning 1`;
  return done.length > 0;
}

/** The claim's request did nothing that must be replayed (a 5xx, a 409): the key is free again. */
export async function releaseIdempotencyKey(db: Database, where: IdempotencyClaimed): Promise<void> {
  await db.$client`
    delete from idempotency_keys
    where scope = ${where.scope} and key = ${where.key}
      and started_at = ${where.startedAt.toISOString()}::timestamptz and claim_token = ${where.claimToken}`;
}

/**
 * Rewrites the stored answers that show participant `subject` with `scrub(body)` (erasure), in batches of
 * `batch` through the subjects index, inside the caller's transaction, at most `maxBatches` of them; answers
 * how many. Each rewritten row loses the subject, so the next batch (or call) finds the rest, and an answer is
 * never scrubbed twice: fewer than `batch * maxBatches` rewritten means none is left.
 */
export async function scrubIdempotentAnswers(
  db: Tx,
  subject: string,
  scrub: (body: string) => string,
  batch = 500,
  maxBatches = Number.POSITIVE_INFINITY,
): Promise<number> {
  const subjects = sql`array[${subject}]::text[]`;
  let total = 0;
  for (let n = 0; n < maxBatches; n++) {
    const rows = await db.execute<{ scope: string; key: string; started: string; body: string | null }>(sql`
      select scope, key, started_at::text as started, response_body as body from ${idempotencyKeys}
      where subjects @> ${subjects} and subjects is not null
      limit ${batch}
      for update`);
    if (rows.length === 0) return total;
    const input = rows.map((r) => ({
      scope: r.scope,
      key: r.key,
      started: r.started,
      body: r.body === null ? null : scrub(r.body),
    }));
    await db.execute(sql`
      update ${idempotencyKeys} k
      set response_body = u.body, subjects = nullif(array_remove(k.subjects, ${subject}), '{}')
      from jsonb_to_recordset(${JSON.stringify(input)}::jsonb) as u(scope text, key text, started timestamptz, body text)
      where k.scope = u.scope and k.key = u.key and k.started_at = u.started`);
    total += rows.length;
    if (rows.length < batch) return total;
  }
  return total;
}
