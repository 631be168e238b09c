import type { Ctx } from '../../context';
import type { CampaignRow } from '../../serialize';
import type { ActionView } from '../../views';
import { loadCampaignFor, type Principal } from '../auth';
import { type AcceptActionInput, type Accepted, acceptLoyaltyAction } from './accept';
import { type AppliedSignal, waitForAction } from './read';

/** How a trigger records its action and waits for it; every field has a default. */
export type TriggerOptions = {
  /**
   * How the action is recorded: the API passes its accept batcher (group commit).
   * @defaultValue acceptLoyaltyAction, one request at a time
   */
  accept?: (ctx: Ctx, campaign: CampaignRow, input: AcceptActionInput) => Promise<Accepted>;
  /**
   * Wakes a `wait` trigger when its action was applied.
   * @defaultValue none: the ledger is polled
   */
  applied?: AppliedSignal;
  /**
   * Longest a `wait` trigger waits for the action to be applied, in ms.
   * @defaultValue 10000
   */
  maxWaitMs?: number;
};

/** A loyalty action as just accepted: QUEUED, not applied yet. */
export type AcceptedActionView = Pick<
  ActionView,
  'id' | 'status' | 'participantId' | 'rewardId' | 'createdAt'
>;

export type TriggerAnswer = {
  success: true;
  message: string;
  /** As accepted, or, after a wait, the action as it stands then. */
  action: AcceptedActionView | ActionView;
};

/**
 * A loyalty action from trigger to answer, the same for every caller (API routes, an import, a dashboard):
 * the campaign's access and checks, the durable write (handed to the worker once committed, see
 * `ctx.afterCommit`), and with `wait` the applied state. `onRecorded` is told, once the action is committed,
 * what to answer if the caller cannot wait any longer.
 */
export async function triggerLoyaltyAction(
  ctx: Ctx,
  options: TriggerOptions,
  principal: Principal,
  campaignId: string,
  input: AcceptActionInput,
  opts: { wait: boolean; onRecorded?: (answer: TriggerAnswer) => void },
): Promise<TriggerAnswer> {
  const looking = ctx.spans ? performance.now() : 0;
  const campaign = await loadCampaignFor(ctx, principal, campaignId);
  ctx.spans?.('campaign', performance.now() - looking);
  const { action, participantCreated } = await (options.accept ?? acceptLoyaltyAction)(ctx, campaign, input);
  const message = participantCreated
    ? 'Participant added and loyalty action accepted'
    : 'Loyalty action accepted';
  const accepted = {
    id: action.id,
    status: action.status,
    participantId: action.participantId,
    rewardId: action.rewardId,
    createdAt: action.createdAt.getTime(),
  };
  opts.onRecorded?.({ success: true, message: `${message}; not applied yet`, action: accepted });
  if (!opts.wait) return { success: true, message, action: accepted };
  const state = await waitForAction(
    ctx,
    campaign.id,
    action.id,
    options.maxWaitMs ?? 10_000,
    options.applied,
  );
  return {
    success: true,
    message: state.status === 'QUEUED' ? `${message}; not applied yet` : message,
    action: state,
  };
}
