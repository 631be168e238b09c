import { events } from '@stampcard/db';
import { type SQL, sql } from 'drizzle-orm';
import { type Ctx, handOff } from '../context';
import type { NewEvent } from '../event-schemas';
import { newEventId } from '../ids';
import { storedEventData } from '../rules/event-data';

export const EVENT_TYPES = [
  'NEW_PARTICIPANT_ADDED',
  'PARTICIPANT_UPDATED',
  'PARTICIPANT_FRAUD_STATUS_UPDATED',
  'LOYALTY_ACTION_APPLIED',
  'PARTICIPANT_REACHED_A_GOAL',
  'PARTICIPANT_REWARD_FULFILLED',
  'PARTICIPANT_SUBMITTED_REWARD_FORM',
  'REWARD_FORM_REVIEWED',
  'PARTICIPANT_DELETED',
  'PARTICIPANT_REWARD_DELETED',
  'CAMPAIGN_ENDED',
  'WEBHOOK_ENDPOINT_DISABLED',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export type { NewEvent };

/**
 * Writes events to the outbox. Call it inside the unit of work of the change that causes them: once that
 * commits, they are handed to the dispatcher (`handOff`). Answers their ids.
 */
export async function recordEvents(ctx: Ctx, list: NewEvent[]): Promise<string[]> {
  const { ids, statement } = eventsInsert(ctx, list);
  if (!statement) return ids;
  await ctx.db.execute(statement);
  await handOff(ctx, { eventIds: ids });
  return ids;
}

/**
 * `recordEvents` in two halves, for a unit of work that sends the insert with other statements (`inOrder`): the
 * events' ids and the statement that records them (none for no events). Once it ran, the unit hands the ids on
 * (`handOff`).
 */
export function eventsInsert(ctx: Ctx, list: NewEvent[]): { ids: string[]; statement?: SQL } {
  if (list.length === 0) return { ids: [] };
  const now = ctx.clock.now();
  const createdAt = now.toISOString();
  // Each id carries the time it is recorded at, to the millisecond: its partition (see `newEventId`).
  const rows = list.map((e) => ({
    id: newEventId(now),
    campaign_id: e.campaignId,
    type: e.type,
    data: storedEventData(e.data),
  }));
  // One JSON parameter whatever the number of events, so the statement's text (and its prepared plan) is the
  // same for every batch; `ordinality` keeps the list's order in `seq`.
  const statement = sql`
    insert into ${events} (id, campaign_id, type, data, created_at)
    select e.id, e.campaign_id, e.type, e.data, ${createdAt}::timestamptz
    from rows from (jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      as (id text, campaign_id text, type text, data jsonb)) with ordinality as e(id, campaign_id, type, data, ord)
    order by e.ord`;
  return { ids: rows.map((r) => r.id), statement };
}
