/** @jsxImportSource hono/jsx */
import { type CatalogEntry, eventCatalog } from '@stampcard/core';
import type { Hono } from 'hono';
import type { AppEnv } from '../../env';
import type { WebhookPageHelpers, WebhookPages } from './common';

/** Every event type a webhook carries: what it means, and an example body built from its schema. */
export function CatalogPage(props: { pages: WebhookPages; catalog: CatalogEntry[] }) {
  return (
    <props.pages.Frame title="Event types">
      <p>
        <a href={props.pages.base}>Endpoints</a>
      </p>
      <h1>Event types</h1>
      <p class="muted">
        Every body is <code>{'{ type, timestamp, data }'}</code>, signed with the endpoint's secret (Standard
        Webhooks). The examples are built from the schemas the service sends with.
      </p>
      <nav aria-label="Event types">
        <ul class="plain columns">
          {props.catalog.map((entry) => (
            <li>
              <a href={`#type-${entry.type}`}>{entry.type}</a>
            </li>
          ))}
        </ul>
      </nav>
      {props.catalog.map((entry) => (
        <section class="card" aria-labelledby={`type-${entry.type}`}>
          <h2 id={`type-${entry.type}`}>{entry.type}</h2>
          <p>{entry.description}</p>
          <details>
            <summary>Example body</summary>
            <pre class="body" tabindex={0}>
              {JSON.stringify(entry.example, null, 2)}
            </pre>
          </details>
        </section>
      ))}
    </props.pages.Frame>
  );
}

/** The event catalog's page (`GET …/webhooks/event-types`): the same for every scope. */
export function registerCatalog(app: Hono<AppEnv>, helpers: WebhookPageHelpers) {
  app.get('/webhooks/event-types', (c) =>
    c.html(<CatalogPage pages={helpers.pagesOf(c)} catalog={eventCatalog()} />),
  );
}
