import type { Ctx } from '../../context';
import type { CampaignRow } from '../../serialize';
import type { ActionView } from '../../views';
import { loadCampaignFor, type Principal } from '../auth';
import { type AcceptActionInput, type Accepted, acceptLoyaltyAction } from './accept';
import { enqueueAccepted } from './ledger';
import { type AppliedSignal, waitForAction } from './read';

/** Where accepted actions go to be applied: the job queue in the service, anything in a test or an import. */
export type ActionQueue = { enqueue(actionIds: string[]): Promise<void> };

export type TriggerPorts = {
  queue: ActionQueue;
  /**
   * How the action is recorded: the API passes its accept batcher (group commit).
   * @defaultValue acceptLoyaltyAction, one request at a time
   */
  accept?: (ctx: Ctx, campaign: CampaignRow, input: AcceptActionInput) => Promise<Accepted>;
  /** Told when the enqueue failed: the action is recorded all the same and the relay queues it later. */
  onEnqueueError(err: unknown, actionId: string): void;
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
 * the campaign's access and checks, the durable write, the enqueue (whose failure loses nothing: the ledger
 * row is committed first and the relay queues it later), and with `wait` the applied state. `onRecorded`
 * is told, once the action is committed, what to answer if the caller cannot wait any longer.
 */
export async function triggerLoyaltyAction(
  ctx: Ctx,
  ports: TriggerPorts,
  principal: Principal,
  campaignId: string,
  input: AcceptActionInput,
  opts: { wait: boolean; onRecorded?: (answer: TriggerAnswer) => void },
): Promise<TriggerAnswer> {
  const campaign = await loadCampaignFor(ctx, principal, campaignId);
  const { action, participantCreated } = await (ports.accept ?? acceptLoyaltyAction)(ctx, campaign, input);
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
  await enqueueAccepted(ports, [action.id]);
  if (!opts.wait) return { success: true, message, action: accepted };
  const state = await waitForAction(ctx, campaign.id, action.id, ports.maxWaitMs ?? 10_000, ports.applied);
  return {
    success: true,
    message: state.status === 'QUEUED' ? `${message}; not applied yet` : message,
    action: state,
  };
}
