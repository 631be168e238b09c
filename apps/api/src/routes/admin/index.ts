import type { App } from '../../env';
import { registerCreateAccount } from './accounts/create-account';
import { registerGetAccount } from './accounts/get-account';
import { registerListAccounts } from './accounts/list-accounts';
import { registerCreateApiKey } from './api-keys/create-api-key';
import { registerGetApiKey } from './api-keys/get-api-key';
import { registerListApiKeys } from './api-keys/list-api-keys';
import { registerRevokeApiKey } from './api-keys/revoke-api-key';
import { registerCreateCampaign } from './campaigns/create-campaign';
import { registerGetCampaignForOperator } from './campaigns/get-campaign';
import { registerUpdateCampaign } from './campaigns/update-campaign';
import { registerListParticipantsByRisk } from './participants/list-participants-by-risk';
import { registerSetFraudRiskLevel } from './participants/set-fraud-risk-level';
import { registerListQueues } from './queues/list-queues';
import { registerCreateReward } from './rewards/create-reward';
import { registerGetReward } from './rewards/get-reward';
import { registerListRewards } from './rewards/list-rewards';
import { registerUpdateReward } from './rewards/update-reward';
import { registerCreateUser } from './users/create-user';
import { registerGetUser } from './users/get-user';
import { registerListUsers } from './users/list-users';
import { registerUpdateUser } from './users/update-user';
import { registerWebhookAdmin } from './webhooks/index';

/** The operator API (`/admin/v1`), one file per endpoint. */
export function registerAdmin(app: App) {
  registerCreateAccount(app);
  registerListAccounts(app);
  registerGetAccount(app);
  registerCreateUser(app);
  registerListUsers(app);
  registerGetUser(app);
  registerUpdateUser(app);
  registerCreateApiKey(app);
  registerListApiKeys(app);
  registerGetApiKey(app);
  registerRevokeApiKey(app);
  registerCreateCampaign(app);
  registerGetCampaignForOperator(app);
  registerUpdateCampaign(app);
  registerCreateReward(app);
  registerListRewards(app);
  registerGetReward(app);
  registerUpdateReward(app);
  registerListParticipantsByRisk(app);
  registerSetFraudRiskLevel(app);
  registerListQueues(app);
  registerWebhookAdmin(app);
}
