import type { App } from '../../../env';
import { registerCreateEndpoint } from './create-endpoint';
import { registerDeleteEndpoint } from './delete-endpoint';
import { registerDiscardPending } from './discard-pending';
import { registerGetEndpoint } from './get-endpoint';
import { registerGetMessage } from './get-message';
import { registerListEndpoints } from './list-endpoints';
import { registerListMessages } from './list-messages';
import { registerReplayMessage } from './replay-message';
import { registerReplayMessages } from './replay-messages';
import { registerRevokePreviousSecret } from './revoke-previous-secret';
import { registerRotateSecret } from './rotate-secret';
import { registerSendTest } from './send-test';
import { registerUpdateEndpoint } from './update-endpoint';

/** Webhook endpoints and their messages on the operator API. */
export function registerWebhookAdmin(app: App) {
  registerCreateEndpoint(app);
  registerListEndpoints(app);
  registerGetEndpoint(app);
  registerUpdateEndpoint(app);
  registerDeleteEndpoint(app);
  registerRotateSecret(app);
  registerRevokePreviousSecret(app);
  registerSendTest(app);
  registerListMessages(app);
  registerReplayMessages(app);
  registerDiscardPending(app);
  registerGetMessage(app);
  registerReplayMessage(app);
}
