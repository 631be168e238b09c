import type { App } from '../../env';
import { registerGetCampaign } from './campaigns/get-campaign';
import { registerListCampaigns } from './campaigns/list-campaigns';
import { registerListEvents } from './events/list-events';
import { registerGetFormSubmission } from './form-submissions/get-form-submission';
import { registerListFormSubmissions } from './form-submissions/list-form-submissions';
import { registerReviewFormSubmission } from './form-submissions/review-form-submission';
import { registerSubmitForm } from './form-submissions/submit-form';
import { registerGetLoyaltyAction } from './loyalty-actions/get-loyalty-action';
import { registerTriggerLoyaltyAction } from './loyalty-actions/trigger-loyalty-action';
import { registerTriggerLoyaltyActionById } from './loyalty-actions/trigger-loyalty-action-by-id';
import { registerAddParticipant } from './participants/add-participant';
import { registerDeleteParticipant } from './participants/delete-participant';
import { registerGetErasure } from './participants/get-erasure';
import { registerGetLeaderboard } from './participants/get-leaderboard';
import { registerGetParticipant } from './participants/get-participant';
import { registerListParticipants } from './participants/list-participants';
import { registerUpdateParticipant } from './participants/update-participant';
import { registerCreatePortalSession } from './portal/create-portal-session';
import { registerApproveReward } from './rewards/approve-reward';
import { registerDeleteReward } from './rewards/delete-reward';
import { registerFulfilReward } from './rewards/fulfil-reward';
import { registerListParticipantRewards } from './rewards/list-participant-rewards';

/** Every public endpoint, one file each. */
export function registerV1(app: App) {
  registerListCampaigns(app);
  registerGetCampaign(app);
  registerGetParticipant(app);
  registerAddParticipant(app);
  registerUpdateParticipant(app);
  registerDeleteParticipant(app);
  registerGetErasure(app);
  registerListParticipants(app);
  registerGetLeaderboard(app);
  registerTriggerLoyaltyAction(app);
  registerTriggerLoyaltyActionById(app);
  registerGetLoyaltyAction(app);
  registerListEvents(app);
  registerListParticipantRewards(app);
  registerApproveReward(app);
  registerFulfilReward(app);
  registerDeleteReward(app);
  registerSubmitForm(app);
  registerListFormSubmissions(app);
  registerGetFormSubmission(app);
  registerReviewFormSubmission(app);
  registerCreatePortalSession(app);
}
