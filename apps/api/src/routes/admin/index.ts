import type { App } from '../../env';
import { registerCreateAccount } from './accounts/create-account';
import { registerCreateApiKey } from './api-keys/create-api-key';
import { registerRevokeApiKey } from './api-keys/revoke-api-key';
import { registerCreateCampaign } from './campaigns/create-campaign';
import { registerGetCampaignForOperator } from './campaigns/get-campaign';
import { registerUpdateCampaign } from './campaigns/update-campaign';
import { registerListParticipantsByRisk } from './participants/list-participants-by-risk';
import { registerSetFraudRiskLevel } from './participants/set-fraud-risk-level';
import { registerListQueues } from './queues/list-queues';
import { registerCreateReward } from './rewards/create-reward';
import { registerUpdateReward } from './rewards/update-reward';
import { registerCreateUser } from './users/create-user';
import { registerWebhookAdmin } from './webhooks/index';

/** The operator API (`/admin/v1`), one file per endpoint. */
export function registerAdmin(app: App) {
  registerCreateAccount(app);
  registerCreateUser(app);
  registerCreateApiKey(app);
  registerRevokeApiKey(app);
  registerCreateCampaign(app);
  registerGetCampaignForOperator(app);
  registerUpdateCampaign(app);
  registerCreateReward(app);
  registerUpdateReward(app);
  registerListParticipantsByRisk(app);
  registerSetFraudRiskLevel(app);
  registerListQueues(app);
  registerWebhookAdmin(app);
}
