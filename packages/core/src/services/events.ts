import { events } from '@stampcard/db';
import type { Ctx } from '../context';
import type { NewEvent } from '../event-schemas';
import { newId } from '../ids';

export const EVENT_TYPES = [
  'NEW_PARTICIPANT_ADDED',
  'PARTICIPANT_UPDATED',
  'PARTICIPANT_FRAUD_STATUS_UPDATED',
  'LOYALTY_ACTION_APPLIED',
  'PARTICIPANT_REACHED_A_GOAL',
  'PARTICIPANT_REWARD_FULFILLED',
  'PARTICIPANT_SUBMITTED_REWARD_FORM',
  'REWARD_FORM_REVIEWED',
  'CAMPAIGN_ENDED',
  'WEBHOOK_ENDPOINT_DISABLED',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export type { NewEvent };

/**
 * Writes events to the outbox. Call it inside the transaction of the change that causes them. Answers their
 * ids, which the caller may hand to the dispatcher once the transaction has committed.
 */
export async function recordEvents(ctx: Ctx, list: NewEvent[]): Promise<string[]> {
  if (list.length === 0) return [];
  const createdAt = ctx.clock.now();
  const rows = list.map((e) => ({ id: newId('event'), createdAt, ...e }));
  await ctx.db.insert(events).values(rows);
  return rows.map((r) => r.id);
}
