import { and, eq, lte, or, sql } from 'drizzle-orm';
import type { Tx } from './client';
import { idempotencyKeys } from './schema/idempotency';

export type IdempotencyRow = typeof idempotencyKeys.$inferSelect;

export type IdempotencyClaim = {
  scope: string;
  key: string;
  requestHash: string;
  method: string;
  path: string;
  /** A token of this claim only: `recordIdempotentAnswer` and `releaseIdempotencyKey` act on it alone. */
  claimToken: string;
  now: Date;
  lockedUntil: Date;
  expiresAt: Date;
};

/**
 * Claims a key in ONE statement: inserted when new, taken over when the row there has expired, or is a
 * `RUNNING` claim of the same request whose `lockedUntil` has passed (its process died). Answers `claimed`,
 * or the row that holds the key (another request, one still running, or an answer to replay). A row that
 * vanishes between the two statements (its request failed and released it) is claimed again: at most three
 * tries, then the last holder is answered as running.
 */
export async function claimIdempotencyKey(
  db: Tx,
  claim: IdempotencyClaim,
): Promise<{ claimed: true } | { claimed: false; row: IdempotencyRow }> {
  const values = {
    scope: claim.scope,
    key: claim.key,
    requestHash: claim.requestHash,
    method: claim.method,
    path: claim.path,
    state: 'RUNNING' as const,
    claimToken: claim.claimToken,
    startedAt: claim.now,
    lockedUntil: claim.lockedUntil,
    expiresAt: claim.expiresAt,
  };
  for (let attempt = 0; ; attempt++) {
    const taken = await db
      .insert(idempotencyKeys)
      .values(values)
      .onConflictDoUpdate({
        target: [idempotencyKeys.scope, idempotencyKeys.key],
        set: {
          ...values,
          responseStatus: null,
          responseContentType: null,
          responseHeaders: null,
          responseBody: null,
          subjects: null,
        },
        setWhere: or(
          lte(idempotencyKeys.expiresAt, claim.now),
          and(
            eq(idempotencyKeys.state, 'RUNNING'),
            lte(idempotencyKeys.lockedUntil, claim.now),
            eq(idempotencyKeys.requestHash, claim.requestHash),
          ),
        ),
      })
      .returning({ key: idempotencyKeys.key });
    if (taken.length > 0) return { claimed: true };
    const [row] = await db
      .select()
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.scope, claim.scope), eq(idempotencyKeys.key, claim.key)));
    if (row) return { claimed: false, row };
    if (attempt >= 2) throw new Error('Idempotency key claim did not settle after three tries');
  }
}

export type IdempotentAnswer = {
  status: number;
  contentType: string | null;
  headers: Record<string, string>;
  body: string;
  /** The participants the answer shows, by id (erasing one scrubs this answer); empty: none. */
  subjects: string[];
};

/** The claim's request answered: the row becomes `DONE` with the answer to replay, until it expires. */
export async function recordIdempotentAnswer(
  db: Tx,
  where: { scope: string; key: string; claimToken: string },
  answer: IdempotentAnswer,
): Promise<boolean> {
  const done = await db
    .update(idempotencyKeys)
    .set({
      state: 'DONE',
      responseStatus: answer.status,
      responseContentType: answer.contentType,
      responseHeaders: answer.headers,
      responseBody: answer.body,
      subjects: answer.subjects.length > 0 ? answer.subjects : null,
    })
    .where(
      and(
        eq(idempotencyKeys.scope, where.scope),
        eq(idempotencyKeys.key, where.key),
        eq(idempotencyKeys.claimToken, where.claimToken),
        eq(idempotencyKeys.state, 'RUNNING'),
      ),
    )
    .returning({ key: idempotencyKeys.key });
  return done.length > 0;
}

/** The claim's request did nothing that must be replayed (a 5xx, a 409): the key is free again. */
export async function releaseIdempotencyKey(
  db: Tx,
  where: { scope: string; key: string; claimToken: string },
): Promise<void> {
  await db
    .delete(idempotencyKeys)
    .where(
      and(
        eq(idempotencyKeys.scope, where.scope),
        eq(idempotencyKeys.key, where.key),
        eq(idempotencyKeys.claimToken, where.claimToken),
      ),
    );
}

/**
 * Deletes up to `limit` rows that expired before `now` (oldest first, through the expiry index) and answers
 * how many. A bounded statement: the purge deletes a backlog in several, never in one long lock.
 */
export async function purgeIdempotencyKeys(db: Tx, now: Date, limit = 1000): Promise<number> {
  const at = sql`${now.toISOString()}::timestamptz`;
  const deleted = await db.execute<{ key: string }>(sql`
    delete from ${idempotencyKeys} k
    using (
      select scope, key from ${idempotencyKeys}
      where expires_at <= ${at}
      order by expires_at
      limit ${limit}
      for update skip locked
    ) d
    where k.scope = d.scope and k.key = d.key and k.expires_at <= ${at}
    returning k.key`);
  return deleted.length;
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
    const rows = await db.execute<{ scope: string; key: string; body: string | null }>(sql`
      select scope, key, response_body as body from ${idempotencyKeys}
      where subjects @> ${subjects} and subjects is not null
      limit ${batch}
      for update`);
    if (rows.length === 0) return total;
    const input = rows.map((r) => ({
      scope: r.scope,
      key: r.key,
      body: r.body === null ? null : scrub(r.body),
    }));
    await db.execute(sql`
      update ${idempotencyKeys} k
      set response_body = u.body, subjects = nullif(array_remove(k.subjects, ${subject}), '{}')
      from jsonb_to_recordset(${JSON.stringify(input)}::jsonb) as u(scope text, key text, body text)
      where k.scope = u.scope and k.key = u.key`);
    total += rows.length;
    if (rows.length < batch) return total;
  }
  return total;
}
