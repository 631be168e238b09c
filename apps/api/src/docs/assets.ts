import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { App } from '../env';
import { DOCS_PATH } from '../lib/docs-paths';

/** Swagger UI's files, served from the installed `swagger-ui-dist` package: the page loads nothing from elsewhere. */
const require = createRequire(import.meta.url);
const SWAGGER_UI_VERSION: string = require('swagger-ui-dist/package.json').version;
/** Versioned, so the files can be cached for good. */
export const ASSET_BASE = `${DOCS_PATH}/assets/${SWAGGER_UI_VERSION}`;
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

/** `GET <ASSET_BASE>/swagger-ui-dist/<file>`: each file read once, on its first request, then kept in memory. */
export function registerDocsAssets(app: App) {
  const files = new Map<string, Promise<string>>();
  for (const [name, type] of Object.entries(ASSETS)) {
    app.get(`${ASSET_BASE}/swagger-ui-dist/${name}`, async (c) => {
      let text = files.get(name);
      if (!text) {
        text = readFile(require.resolve(`swagger-ui-dist/${name}`), 'utf8');
        files.set(name, text);
        text.catch(() => files.delete(name));
      }
      return c.body(await text, 200, {
        'Content-Type': type,
        'Cache-Control': 'public, max-age=31536000, immutable',
      });
    });
  }
}
