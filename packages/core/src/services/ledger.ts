import { loyaltyActions, type Metadata } from '@stampcard/db';
import { type Ctx, handOff } from '../context';
import { newActionId } from '../ids';
import type { ActionRow } from '../serialize';

/** A loyalty action to record in the ledger, QUEUED for the worker. */
export type QueuedActionInput = {
  /** @defaultValue a new action id */
  id?: string;
  campaignId: string;
  participantId: string;
  rewardId: string;
  metadata?: Metadata | null;
  /**
   * Identifies the request (key, method, path, body) for the 409 of an identical one in flight. Only a trigger
   * has one: actions a request makes several of (points conversions) leave it null, which the in-flight index
   * (`loyalty_actions_inflight_uq`, on non-null hashes of QUEUED rows) ignores.
   */
  requestHash?: string | null;
  /** The participant import that carries a count over with this action. */
  importId?: string | null;
  /** Applied without events (an import's `silent=true`). */
  silent?: boolean;
};

/** The ledger row of a newly accepted action: a new id, QUEUED, created now. */
function queuedActionRow(ctx: Ctx, input: QueuedActionInput): typeof loyaltyActions.$inferInsert {
  const now = ctx.clock.now();
  return {
    id: input.id ?? newActionId(now),
    campaignId: input.campaignId,
    participantId: input.participantId,
    rewardId: input.rewardId,
    status: 'QUEUED',
    metadata: input.metadata ?? null,
    requestHash: input.requestHash ?? null,
    importId: input.importId ?? null,
    silent: input.silent ?? false,
    createdAt: now,
  };
}

/**
 * Writes accepted actions to the ledger, QUEUED, in one statement, on `ctx.db` (the caller's unit of work
 * when it has one). Once that commits they are the record, and they are handed to the worker (`handOff`);
 * the relay queues any whose hand-off was lost.
 */
export async function recordQueuedActions(ctx: Ctx, inputs: QueuedActionInput[]): Promise<ActionRow[]> {
  if (inputs.length === 0) return [];
  const rows = await ctx.db
    .insert(loyaltyActions)
    .values(inputs.map((input) => queuedActionRow(ctx, input)))
    .returning();
  await handOff(ctx, { actionIds: rows.map((r) => r.id) });
  return rows;
}
