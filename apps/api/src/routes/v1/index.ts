import type { App } from '../../env';
import { registerGetCampaign } from './campaigns/get-campaign';
import { registerListCampaigns } from './campaigns/list-campaigns';
import { registerListEvents } from './events/list-events';
import { registerGetLoyaltyAction } from './loyalty-actions/get-loyalty-action';
import { registerTriggerLoyaltyAction } from './loyalty-actions/trigger-loyalty-action';
import { registerTriggerLoyaltyActionById } from './loyalty-actions/trigger-loyalty-action-by-id';
import { registerGetParticipant } from './participants/get-participant';

/** Every public endpoint, one file each. */
export function registerV1(app: App) {
  registerListCampaigns(app);
  registerGetCampaign(app);
  registerGetParticipant(app);
  registerTriggerLoyaltyAction(app);
  registerTriggerLoyaltyActionById(app);
  registerGetLoyaltyAction(app);
  registerListEvents(app);
}
