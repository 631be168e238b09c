import type { App } from '../../env';
import { registerCreateEndpoint } from './create-endpoint';
import { registerDeleteEndpoint } from './delete-endpoint';
import { registerDiscardPending } from './discard-pending';
import { registerGetEndpoint } from './get-endpoint';
import { registerGetMessage } from './get-message';
import { registerListEndpoints } from './list-endpoints';
import { registerListEventTypes } from './list-event-types';
import { registerListMessages } from './list-messages';
import { registerRecoverMessages } from './recover-messages';
import { registerReplayMessage } from './replay-message';
import { registerReplayMessages } from './replay-messages';
import { registerRevokePreviousSecret } from './revoke-previous-secret';
import { registerRotateSecret } from './rotate-secret';
import { registerSendTest } from './send-test';
import type { WebhookSurface } from './surface';
import { registerUpdateEndpoint } from './update-endpoint';

/**
 * Webhook endpoints and their messages, on the operator API (every account) or the public API (an ADMIN key's
 * own account): the same route files on both surfaces.
 */
export function registerWebhookRoutes(app: App, s: WebhookSurface) {
  registerCreateEndpoint(app, s);
  registerListEndpoints(app, s);
  registerGetEndpoint(app, s);
  registerUpdateEndpoint(app, s);
  registerDeleteEndpoint(app, s);
  registerRotateSecret(app, s);
  registerRevokePreviousSecret(app, s);
  registerSendTest(app, s);
  registerListMessages(app, s);
  registerReplayMessages(app, s);
  registerDiscardPending(app, s);
  registerGetMessage(app, s);
  registerReplayMessage(app, s);
  registerRecoverMessages(app, s);
  registerListEventTypes(app, s);
}
