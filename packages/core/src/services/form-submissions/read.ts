import { formSubmissions, participants } from '@stampcard/db';
import { and, asc, eq, type SQL, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { notFound } from '../../errors';
import { firstLeftOut, itemsWithinBudget, pageWithinBudget } from '../../paging';
import { type FormSubmissionRow, serializeFormSubmission } from '../../serialize';
import type { FormSubmissionView } from '../../views';

/** Ties of `createdAt` go by id, byte by byte: the same order whatever the database's collation. */
const byteWiseId = sql`${formSubmissions.id} collate "C"`;

export type FormSubmissionFilter = { status?: FormSubmissionRow['status']; rewardId?: string };

const filtered = (campaignId: string, f: FormSubmissionFilter): SQL | undefined =>
  and(
    eq(formSubmissions.campaignId, campaignId),
    f.status ? eq(formSubmissions.status, f.status) : undefined,
    f.rewardId ? eq(formSubmissions.rewardId, f.rewardId) : undefined,
  );

/** Submissions with their participant's email, in one statement. */
function withEmail(ctx: Ctx) {
  return ctx.db
    .select({ submission: formSubmissions, email: participants.email })
    .from(formSubmissions)
    .innerJoin(participants, eq(participants.id, formSubmissions.participantId));
}

/**
 * A campaign's form submissions, oldest first (then by id), filtered by `status` and `rewardId`, cursor-paged:
 * `nextId` is the id of the first submission of the next page (null on the last), given back to get it. A
 * `nextId` that is not one of the campaign's submissions is a 404; one that the filters leave out still marks
 * a position. A page holds at most `limit` submissions, and what fits in its byte budget (`itemsWithinBudget`).
 */
export async function listFormSubmissions(
  ctx: Ctx,
  campaignId: string,
  page: FormSubmissionFilter & { limit: number; nextId?: string },
): Promise<{ formSubmissions: FormSubmissionView[]; limit: number; nextId: string | null; more: boolean }> {
  let from: SQL = sql`true`;
  if (page.nextId) {
    const [cursor] = await ctx.db
      .select({ id: formSubmissions.id })
      .from(formSubmissions)
      .where(and(eq(formSubmissions.id, page.nextId), eq(formSubmissions.campaignId, campaignId)));
    if (!cursor) throw notFound(`Form submission ${page.nextId} in campaign ${campaignId}`);
    from = sql`(${formSubmissions.createdAt}, ${byteWiseId}) >= (
      select created_at, id collate "C" from ${formSubmissions} where id = ${cursor.id})`;
  }
  // The window is sized in PostgreSQL; only the submissions the page may carry are loaded (`pageWithinBudget`).
  const window = ctx.db
    .select({
      id: formSubmissions.id,
      createdAt: formSubmissions.createdAt,
      formData: formSubmissions.formData,
    })
    .from(formSubmissions)
    .where(and(filtered(campaignId, page), from))
    .orderBy(asc(formSubmissions.createdAt), asc(byteWiseId))
    .limit(page.limit + 1)
    .as('window');
  const kept = pageWithinBudget(ctx, window, {
    order: sql`${window.createdAt}, ${window.id} collate "C"`,
    size: sql`octet_length(${window.formData}::text)`,
    limit: page.limit,
  });
  const rows = await ctx.db
    .select({ submission: formSubmissions, email: participants.email, next: kept.rows.next })
    .from(kept.rows)
    .innerJoin(formSubmissions, eq(formSubmissions.id, kept.rows.id))
    .innerJoin(participants, eq(participants.id, formSubmissions.participantId))
    .where(kept.within)
    .orderBy(asc(kept.rows.ord));
  const items = rows.map((r) => serializeFormSubmission(r.submission, r.email));
  const shown = itemsWithinBudget(items);
  const nextId = firstLeftOut(
    rows.map((r) => ({ id: r.submission.id, next: r.next })),
    shown,
  );
  return {
    formSubmissions: items.slice(0, shown),
    limit: page.limit,
    nextId,
    more: nextId !== null,
  };
}

/** One of a campaign's form submissions (404 when it is not one). */
export async function getFormSubmission(
  ctx: Ctx,
  campaignId: string,
  submissionId: string,
): Promise<FormSubmissionView> {
  const [row] = await withEmail(ctx).where(
    and(eq(formSubmissions.id, submissionId), eq(formSubmissions.campaignId, campaignId)),
  );
  if (!row) throw notFound(`Form submission ${submissionId} in campaign ${campaignId}`);
  return serializeFormSubmission(row.submission, row.email);
}
