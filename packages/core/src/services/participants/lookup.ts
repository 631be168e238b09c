import { participants } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { notFound } from '../../errors';
import type { ParticipantRow } from '../../serialize';

/** Emails are kept lower-cased and trimmed: one participant per address and campaign. */
export const normaliseEmail = (email: string) => email.trim().toLowerCase();

/** A path segment with `@` is an email; anything else is a participant id. */
export function participantMatches(idOrEmail: string) {
  return idOrEmail.includes('@')
    ? eq(participants.email, normaliseEmail(idOrEmail))
    : eq(participants.id, idOrEmail);
}

/** Finds a campaign's participant by email or id. */
export async function findParticipant(
  ctx: Ctx,
  campaignId: string,
  idOrEmail: string,
): Promise<ParticipantRow | undefined> {
  const [row] = await ctx.db
    .select()
    .from(participants)
    .where(and(eq(participants.campaignId, campaignId), participantMatches(idOrEmail)))
    .limit(1);
  return row;
}

export const participantNotFound = (campaignId: string, idOrEmail: string) =>
  notFound(`Participant ${idOrEmail} in campaign ${campaignId}`);

/**
 * A campaign's participant by email or id, its row locked until the transaction `ctx` runs in ends (the lock
 * the worker takes to apply actions); 404 when there is none.
 */
export async function lockParticipant(
  ctx: Ctx,
  campaignId: string,
  idOrEmail: string,
): Promise<ParticipantRow> {
  const [row] = await ctx.db
    .select()
    .from(participants)
    .where(and(eq(participants.campaignId, campaignId), participantMatches(idOrEmail)))
    .limit(1)
    .for('update');
  if (!row) throw participantNotFound(campaignId, idOrEmail);
  return row;
}

export async function requireParticipant(
  ctx: Ctx,
  campaignId: string,
  idOrEmail: string,
): Promise<ParticipantRow> {
  const row = await findParticipant(ctx, campaignId, idOrEmail);
  if (!row) throw participantNotFound(campaignId, idOrEmail);
  return row;
}
