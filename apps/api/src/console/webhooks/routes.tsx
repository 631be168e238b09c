import type { Hono } from 'hono';
import type { AppEnv } from '../../env';
import { registerCatalog } from './catalog';
import type { WebhookPageHelpers } from './common';
import { registerEndpointPage } from './endpoint';
import { registerEndpointList } from './endpoints';
import { registerMessagePage } from './message';

export type { WebhookPageHelpers, WebhookPages } from './common';

/**
 * The webhook pages under `…/webhooks` of `app`: endpoints with their health (`endpoints.tsx`), an endpoint and
 * its message log (`endpoint.tsx`), a message and its attempts (`message.tsx`), the event catalog
 * (`catalog.tsx`). Mounted by the console for the operator (every account) and by the portal for one business
 * (`helpers.pagesOf` says which, per request): every change goes through the operator API's own schemas and
 * the core services the API uses, in the pages' scope, so what lies outside it is not found.
 */
export function registerWebhookPages(app: Hono<AppEnv>, helpers: WebhookPageHelpers) {
  registerEndpointList(app, helpers);
  registerCatalog(app, helpers);
  registerEndpointPage(app, helpers);
  registerMessagePage(app, helpers);
}
