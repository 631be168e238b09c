import type { Database } from '@stampcard/db';
import { assertLive, type Ctx, handOff } from '../../context';
import { newActionId } from '../../ids';
import { microBatch } from '../../micro-batch';
import type { CampaignRow } from '../../serialize';
import { normaliseEmail } from '../participants';
import { type AcceptActionInput, type Accepted, acceptLoyaltyAction, assertAcceptingActions } from './accept';

type Item = { id: string; campaignId: string; input: AcceptActionInput; createdAt: Date };

export type AcceptBatchOptions = {
  /**
   * Longest an action waits for others to share its insert, in ms. 0: none; the actions that arrive in the
   * same turn of the event loop share one, sent right after it, and while `maxInFlight` inserts run the
   * next ones gather for the next insert.
   * @defaultValue 0
   */
  maxWaitMs?: number;
  /**
   * Inserts under way at once, each on a connection of its own: a request arriving while they all run waits
   * for one of them to end (its action then goes in the next insert, with every other that came meanwhile).
   * @defaultValue 2
   */
  maxInFlight?: number;
  /**
   * Most actions per insert.
   * @defaultValue 64
   */
  maxSize?: number;
};

/**
 * Group commit for the accept path. The common case (the participant exists, the request is not a duplicate
 * of one in flight) of every request arriving within a millisecond is ONE statement: an
 * `INSERT … SELECT` that finds each reward in its campaign and each participant by email or id, and skips
 * what it cannot insert. Each request is answered once that statement has committed its row. A request
 * whose row was not inserted takes the one-by-one path (`acceptLoyaltyAction`), which says why: a 404, a new
 * participant to create, a 409 for a duplicate. A request whose deadline passes while its row waits for a
 * batch is dropped before the batch is sent; once sent, its `ctx.commit` says so until the insert answers.
 */
export function createAcceptBatcher(db: Database, opts: AcceptBatchOptions = {}) {
  const batch = microBatch<Item, string | null>({
    maxSize: opts.maxSize ?? 64,
    maxWaitMs: opts.maxWaitMs ?? 0,
    maxInFlight: opts.maxInFlight ?? 2,
    name: 'accept',
    // The insert commits on its own: each request's row landed when it came back.
    landed: (participantId) => participantId !== null,
    run: async (items) => {
      const rows = items.map((it) => {
        const who = it.input.participant;
        return {
          id: it.id,
          campaign_id: it.campaignId,
          reward_id: it.input.rewardId,
          email: 'email' in who ? normaliseEmail(who.email) : null,
          participant_id: 'id' in who ? who.id : null,
          metadata: it.input.metadata ?? null,
          request_hash: it.input.requestHash ?? null,
          created_at: it.createdAt.toISOString(),
        };
      });
      // postgres.js's own statement, prepared once per connection (drizzle sends its statements unprepared,
      // planned again each time): the same text whatever the batch, its rows one jsonb parameter.
      const inserted = await db.$client<{ id: string; participant_id: string }[]>`
        insert into loyalty_actions
          (id, campaign_id, participant_id, reward_id, status, metadata, request_hash, created_at)
        select q.id, q.campaign_id, p.id, q.reward_id, 'QUEUED', q.metadata, q.request_hash, q.created_at
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as q(
          id text, campaign_id text, reward_id text, email text, participant_id text, metadata jsonb,
          request_hash text, created_at timestamptz)
        join rewards r on r.id = q.reward_id and r.campaign_id = q.campaign_id
        join lateral (
          select p.id from participants p
          where p.campaign_id = q.campaign_id and p.email = q.email
          union all
          select p.id from participants p
          where p.campaign_id = q.campaign_id and p.id = q.participant_id
          limit 1
        ) p on true
        on conflict do nothing
        returning id, participant_id`;
      const byId = new Map(inserted.map((r) => [r.id, r.participant_id]));
      return items.map((it) => byId.get(it.id) ?? null);
    },
  });

  return {
    /** `acceptLoyaltyAction`, with the common case sharing one statement with concurrent requests. */
    async accept(ctx: Ctx, campaign: CampaignRow, input: AcceptActionInput): Promise<Accepted> {
      assertAcceptingActions(campaign);
      assertLive(ctx);
      const createdAt = ctx.clock.now();
      const item = { id: newActionId(createdAt), campaignId: campaign.id, input, createdAt };
      // Dropped unsent if the request's deadline passes while it queues; marked sent when its batch goes.
      const participantId = await batch.submit(item, {
        signal: ctx.signal,
        commit: ctx.commit,
        spans: ctx.spans,
        subject: { actionId: item.id },
      });
      if (participantId === null) return acceptLoyaltyAction(ctx, campaign, input);
      // The shared insert committed this row: hand it to the worker, as any committed write does.
      const handing = ctx.spans ? performance.now() : 0;
      await handOff(ctx, { actionIds: [item.id] });
      ctx.spans?.('hand-off', performance.now() - handing);
      return {
        action: {
          id: item.id,
          status: 'QUEUED',
          participantId,
          rewardId: input.rewardId,
          createdAt: item.createdAt,
        },
        participantCreated: false,
      };
    },
  };
}

export type AcceptBatcher = ReturnType<typeof createAcceptBatcher>;
