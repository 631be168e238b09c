/** Where the OpenAPI 3.1 document and the page that renders it are served (no API key for either). */
export const OPENAPI_PATH = '/v1/openapi.json';
export const DOCS_PATH = '/v1/docs';
/** The id of the docs page's errors section: where every error body's `supportUrl` points by default. */
export const ERRORS_ANCHOR = 'errors';

export const defaultSupportUrl = (origin: string) => `${origin}${DOCS_PATH}#${ERRORS_ANCHOR}`;
