/** @jsxImportSource hono/jsx */
import {
  type ColumnPreview,
  campaignForReview,
  DomainError,
  listImports,
  type ParticipantImportView,
  previewImport,
  serializeImport,
  showImport,
} from '@stampcard/core';
import type { Context, Hono } from 'hono';
import type { AppEnv } from '../env';
import { ERROR_STATUS } from '../lib/error-status';
import { exportResponse, refusedRowsExport } from '../lib/exports';
import { answerImportUpload, importQuery } from '../lib/imports';
import { type ConsoleHelpers, idOf, utcMinute } from './lib';
import { CONSOLE_PATH, Layout } from './views';

export const IMPORTS_PATH = `${CONSOLE_PATH}/imports`;
/** Where the page's script uploads a file (a CSV body, streamed as the API's import streams it). */
export const CONSOLE_UPLOAD_PATH = `${IMPORTS_PATH}/upload`;
/** The first bytes of a file the page sends for its column mapping: the header must end within them. */
const PREVIEW_BYTES = 64 * 1024;
/** Imports the page lists for a campaign. */
const LISTED = 20;

type C = Context<AppEnv>;

const importPath = (campaignId: string, importId: string) =>
  `${IMPORTS_PATH}/${encodeURIComponent(campaignId)}/${encodeURIComponent(importId)}`;

const statusOf = (err: DomainError) => ERROR_STATUS[err.code] as 400 | 403 | 404 | 409 | 422;

/** The column mapping of a file about to be imported: what each column becomes, and whether it can start. */
export function MappingFragment(props: { columns: ColumnPreview[]; problems: string[] }) {
  const ready = props.problems.length === 0;
  return (
    <div>
      <p
        data-ready={ready ? 'true' : 'false'}
        class={ready ? 'notice' : 'error'}
        role={ready ? 'status' : 'alert'}
      >
        {ready
          ? 'The columns below will be imported as shown. Rows are checked one by one when the import runs.'
          : `This file cannot be imported: ${props.problems.join('; ')}`}
      </p>
      {props.columns.length > 0 ? (
        <section class="table-wrap" tabindex={0} aria-label="Column mapping">
          <table>
            <thead>
              <tr>
                <th scope="col">Column</th>
                <th scope="col">Becomes</th>
                <th scope="col">Problem</th>
              </tr>
            </thead>
            <tbody>
              {props.columns.map((c) => (
                <tr>
                  <td>
                    <code>{c.column}</code>
                  </td>
                  <td>{c.becomes}</td>
                  <td>{c.problem ?? '–'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ) : null}
    </div>
  );
}

const running = (i: ParticipantImportView) => i.status === 'QUEUED' || i.status === 'RUNNING';

/** An import's progress: polled every second while it runs (htmx swaps the whole block). */
export function ProgressFragment(props: { imp: ParticipantImportView }) {
  const { imp } = props;
  const progressPath = `${importPath(imp.campaignId, imp.id)}/progress`;
  const total = imp.rowsTotal;
  return (
    <section
      id="import-progress"
      aria-labelledby="import-progress-title"
      {...(running(imp) ? { 'hx-get': progressPath, 'hx-trigger': 'every 1s', 'hx-swap': 'outerHTML' } : {})}
    >
      <h2 id="import-progress-title">
        Status: <span data-status={imp.status}>{imp.status}</span>
      </h2>
      <p>
        <label for="import-bar">Rows imported</label>{' '}
        <progress id="import-bar" max={total ?? 1} value={total === null ? undefined : imp.rowsDone}>
          {imp.rowsDone}
        </progress>{' '}
        <span data-rows-done={imp.rowsDone}>
          {imp.rowsDone.toLocaleString('en')} of {total === null ? 'counting…' : total.toLocaleString('en')}
        </span>
      </p>
      {imp.error ? (
        <p class="error" role="alert">
          {imp.error}
        </p>
      ) : null}
      <table>
        <tbody>
          {(
            [
              ['Created', imp.created],
              ['Updated', imp.updated],
              ['Unchanged', imp.unchanged],
              ['Refused', imp.refused],
              ['Counts carried over (loyalty actions)', imp.loyaltyActionsQueued],
            ] as const
          ).map(([label, n]) => (
            <tr>
              <th scope="row">{label}</th>
              <td class="n">{n.toLocaleString('en')}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function ImportsPage(props: {
  csrf: string;
  campaignId?: string;
  campaignName?: string;
  imports?: ParticipantImportView[];
  problem?: string;
}) {
  const { campaignId } = props;
  const q = campaignId ? `?campaignId=${encodeURIComponent(campaignId)}` : '';
  return (
    <Layout title="Imports" current="imports" csrf={props.csrf}>
      <h1>Import participants{props.campaignName ? `: ${props.campaignName}` : ''}</h1>
      {props.problem ? (
        <p class="error" role="alert">
          {props.problem}
        </p>
      ) : null}
      <form method="get" action={IMPORTS_PATH} class="inline" aria-label="Choose a campaign">
        <label for="i-campaign">Campaign id</label>
        <input id="i-campaign" name="campaignId" required maxlength={64} value={campaignId ?? ''} />
        <button type="submit">Open</button>
      </form>
      {campaignId && props.imports ? (
        <>
          <form
            id="import-form"
            class="stack"
            aria-label="New import"
            data-csrf={props.csrf}
            data-preview={`${IMPORTS_PATH}/preview${q}`}
            data-upload={`${CONSOLE_UPLOAD_PATH}${q}`}
            data-imports={`${IMPORTS_PATH}/${encodeURIComponent(campaignId)}`}
          >
            <p class="muted">
              A CSV file of up to 50 MiB: a header naming <code>email</code> (required),{' '}
              <code>firstName</code>, <code>lastName</code>, <code>notes</code>, <code>ipAddress</code>,{' '}
              <code>fingerprint</code>, <code>metadata.&lt;key&gt;</code> and{' '}
              <code>loyaltyActionCount.&lt;rewardId&gt;</code> columns. Choose it to see how its columns map
              before you start.
            </p>
            <label for="import-file">File</label>
            <input id="import-file" name="file" type="file" accept=".csv,text/csv" required />
            <label for="import-mode">Counts</label>
            <select id="import-mode" name="mode">
              <option value="SET">SET: raise counts to the file's</option>
              <option value="ADD">ADD: add the file's counts</option>
            </select>
            <label>
              <input id="import-silent" name="silent" type="checkbox" value="true" /> Silent: send no webhook
              for this import
            </label>
            <div id="import-mapping" aria-live="polite" />
            <button id="import-start" type="submit" disabled>
              Start the import
            </button>
            <p id="import-status" role="status" aria-live="polite" />
          </form>
          <section class="table-wrap" tabindex={0} aria-labelledby="imports-title">
            <h2 id="imports-title">Latest imports</h2>
            {props.imports.length === 0 ? (
              <p class="muted">No import yet.</p>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Started (UTC)</th>
                    <th scope="col">Status</th>
                    <th scope="col" class="n">
                      Rows
                    </th>
                    <th scope="col" class="n">
                      Created
                    </th>
                    <th scope="col" class="n">
                      Refused
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {props.imports.map((i) => (
                    <tr>
                      <td>
                        <a href={importPath(i.campaignId, i.id)}>{utcMinute(i.createdAt)}</a>
                      </td>
                      <td>{i.status}</td>
                      <td class="n">{i.rowsDone.toLocaleString('en')}</td>
                      <td class="n">{i.created.toLocaleString('en')}</td>
                      <td class="n">{i.refused.toLocaleString('en')}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        </>
      ) : null}
    </Layout>
  );
}

export function ImportPage(props: { csrf: string; imp: ParticipantImportView }) {
  const { imp } = props;
  return (
    <Layout title="Import" current="imports" csrf={props.csrf}>
      <h1>Import {imp.id}</h1>
      <p>
        <a href={`${IMPORTS_PATH}?campaignId=${encodeURIComponent(imp.campaignId)}`}>Back to the imports</a> ·
        Mode {imp.mode}
        {imp.silent ? ', silent' : ''} · {imp.format}, {(imp.sizeBytes / 1024).toFixed(0)} KiB · started{' '}
        {utcMinute(imp.createdAt)} UTC
      </p>
      <ProgressFragment imp={imp} />
      <section class="table-wrap" tabindex={0} aria-labelledby="refused-title">
        <h2 id="refused-title">Refused rows</h2>
        {imp.refused === 0 ? (
          <p class="muted">None so far.</p>
        ) : (
          <>
            <p>
              <a href={`${importPath(imp.campaignId, imp.id)}/refused-rows`} download>
                Download every refused row (CSV)
              </a>
              {imp.refused > imp.refusedRows.length ? ` · the first ${imp.refusedRows.length} below` : ''}
            </p>
            <table>
              <thead>
                <tr>
                  <th scope="col" class="n">
                    Row
                  </th>
                  <th scope="col">Reason</th>
                  <th scope="col">Why</th>
                </tr>
              </thead>
              <tbody>
                {imp.refusedRows.map((r) => (
                  <tr>
                    <td class="n">{r.row}</td>
                    <td>{r.reason}</td>
                    <td>{r.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </section>
    </Layout>
  );
}

/** The import page's routes: the page, the mapping of a file's header, the upload, an import and its rows. */
export function registerImports(app: Hono<AppEnv>, helpers: ConsoleHelpers) {
  /** The campaign the query names (404 when there is none). */
  const campaignOf = (c: C) => campaignForReview(c.get('ctx'), idOf(c.req.query('campaignId')) ?? '');

  app.get('/imports', async (c) => {
    const csrf = helpers.csrfOf(c);
    const campaignId = idOf(c.req.query('campaignId'));
    if (!campaignId) return c.html(<ImportsPage csrf={csrf} />);
    try {
      const campaign = await campaignOf(c);
      const imports = await listImports(c.get('ctx'), campaign.id, LISTED);
      return c.html(
        <ImportsPage
          csrf={csrf}
          campaignId={campaign.id}
          campaignName={campaign.name}
          imports={imports.map((i) => serializeImport(i, []))}
        />,
      );
    } catch (err) {
      if (!(err instanceof DomainError) || err.code === 'UNAVAILABLE') throw err;
      return c.html(<ImportsPage csrf={csrf} campaignId={campaignId} problem={err.message} />, statusOf(err));
    }
  });

  // The header's first bytes, from the page's script: the mapping as the import will read it (nothing stored).
  app.post('/imports/preview', async (c) => {
    const campaign = await campaignOf(c);
    const head = Buffer.from(await c.req.arrayBuffer()).subarray(0, PREVIEW_BYTES);
    return c.html(<MappingFragment {...(await previewImport(c.get('ctx'), campaign, head))} />);
  });

  // The file, from the page's script, as the API takes it: 202 with the import (the script opens its page).
  app.post('/imports/upload', async (c) => {
    const campaign = await campaignOf(c);
    const query = importQuery.parse({ mode: c.req.query('mode'), silent: c.req.query('silent') });
    return answerImportUpload(c, campaign, query);
  });

  async function importOf(c: C) {
    const campaignId = idOf(c.req.param('campaignId'));
    const importId = idOf(c.req.param('importId'));
    if (!campaignId || !importId) throw new DomainError('NOT_FOUND', 'No such import.');
    const campaign = await campaignForReview(c.get('ctx'), campaignId);
    return showImport(c.get('ctx'), campaign.id, importId);
  }

  app.get('/imports/:campaignId/:importId', async (c) => {
    const found = await importOf(c);
    return c.html(
      <ImportPage csrf={helpers.csrfOf(c)} imp={serializeImport(found.import, found.refusals)} />,
    );
  });

  app.get('/imports/:campaignId/:importId/progress', async (c) => {
    const found = await importOf(c);
    return c.html(<ProgressFragment imp={serializeImport(found.import, [])} />);
  });

  app.get('/imports/:campaignId/:importId/refused-rows', async (c) => {
    const found = await importOf(c);
    return exportResponse(c, refusedRowsExport(found.import), 'csv');
  });
}
