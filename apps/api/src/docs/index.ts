import type { App } from '../env';
import { DOCS_PATH, OPENAPI_PATH } from '../lib/docs-paths';
import { registerDocsAssets } from './assets';
import { openApiDocument, SECURITY_SCHEMES } from './document';
import { docsPage } from './page';
import { registerWebhooks } from './webhooks';

export { DOCS_PATH, defaultSupportUrl, ERRORS_ANCHOR, OPENAPI_PATH } from '../lib/docs-paths';
export { openApiDocument } from './document';

/**
 * `GET /v1/openapi.json`, `GET /v1/docs` and Swagger UI's files. Registered before the `/v1` middleware
 * (API key, rate limits, request deadline): they answer without a key, and from memory once built.
 */
export function registerDocs(app: App) {
  for (const [name, scheme] of Object.entries(SECURITY_SCHEMES)) {
    app.openAPIRegistry.registerComponent('securitySchemes', name, scheme);
  }
  registerWebhooks(app);
  let json: string | undefined;
  let page: ReturnType<typeof docsPage> | undefined;

  app.get(OPENAPI_PATH, (c) => {
    json ??= JSON.stringify(openApiDocument(app));
    return c.body(json, 200, { 'Content-Type': 'application/json; charset=utf-8' });
  });
  app.get(DOCS_PATH, (c) => {
    page ??= docsPage();
    return c.html(page.html, 200, { 'Content-Security-Policy': page.csp });
  });
  registerDocsAssets(app);
}
