/** @jsxImportSource hono/jsx */
import {
  createEndpoint,
  DomainError,
  endpointsWithHealth,
  getCampaignForOperator,
  listAccounts,
  listCampaignsForOperator,
  notFound,
  showAccount,
} from '@stampcard/core';
import type { Hono } from 'hono';
import type { AppEnv } from '../../env';
import { EndpointBody } from '../../routes/webhooks/schemas';
import { idOf, pagedOn, utcMinute } from '../lib';
import {
  type C,
  Csrf,
  ENDPOINTS_PAGE,
  type EndpointDraft,
  EndpointFields,
  endpointOptions,
  Flash,
  type Flashes,
  noticeOf,
  problemOf,
  readEndpointForm,
  refused,
  Sparkline,
  scopeOf,
  stateOf,
  type WebhookPageHelpers,
  type WebhookPages,
  withStatus,
} from './common';

/** Accounts the operator's first page lists at once; campaigns an account's forms offer. */
const ACCOUNTS_PAGE = 50;
const CAMPAIGNS_OFFERED = 100;

export type EndpointList = Awaited<ReturnType<typeof endpointsWithHealth>>;

/** The query of the list: one campaign's endpoints or every campaign's, and where the page starts. */
type ListQuery = { campaignId?: string; after?: string };

/** The operator's first page: the accounts, each opening its endpoints. */
export function AccountPicker(
  props: {
    pages: WebhookPages;
    accounts: { id: string; name: string; plan: string }[];
    next?: string;
  } & Flashes,
) {
  return (
    <props.pages.Frame title="Webhooks">
      <h1>Webhooks</h1>
      <Flash notice={props.notice} problem={props.problem} />
      <p class="muted">Pick an account to see its endpoints, their deliveries and their health.</p>
      <ul class="plain">
        {props.accounts.map((a) => (
          <li>
            <a href={`${props.pages.base}?accountId=${encodeURIComponent(a.id)}`}>{a.name}</a>{' '}
            <span class="muted">({a.plan})</span>
          </li>
        ))}
      </ul>
      {props.accounts.length === 0 ? <p class="muted">No account yet.</p> : null}
      {props.next ? <a href={props.next}>Next accounts</a> : null}
      <p>
        <a href={`${props.pages.base}/event-types`}>Event types and example bodies</a>
      </p>
    </props.pages.Frame>
  );
}

/** The pending messages of an endpoint as the list shows them. */
const pendingText = (e: { pending: number; pendingCapped: boolean }) =>
  e.pendingCapped ? `more than ${e.pending}` : String(e.pending);

/** One account's endpoints (every campaign's, or one's), a page at a time, and the form that adds one. */
export function EndpointsPage(
  props: {
    pages: WebhookPages;
    accountName: string;
    campaigns: { id: string; name: string }[];
    list: EndpointList;
    query: ListQuery;
    next?: string;
    /** The add form as it was sent, when it was refused. */
    draft?: EndpointDraft & { campaignId?: string };
  } & Flashes,
) {
  const { pages, list, query } = props;
  const chosen = props.draft?.campaignId ?? query.campaignId;
  return (
    <pages.Frame title="Webhooks">
      <h1>Webhooks: {props.accountName}</h1>
      <Flash notice={props.notice} problem={props.problem} />
      <p>
        <a href={`${pages.base}/event-types`}>Event types and example bodies</a>
        {pages.operator ? (
          <>
            {' · '}
            <a href={pages.base}>All accounts</a>
          </>
        ) : null}
      </p>
      {props.campaigns.length > 1 ? (
        <form method="get" action={pages.base} class="inline" aria-label="Show the endpoints of">
          {pages.operator && pages.accountId ? (
            <input type="hidden" name="accountId" value={pages.accountId} />
          ) : null}
          <label for="list-campaign">Campaign</label>
          <select id="list-campaign" name="campaignId">
            <option value="">Every campaign</option>
            {props.campaigns.map((x) => (
              <option value={x.id} selected={query.campaignId === x.id}>
                {x.name}
              </option>
            ))}
          </select>
          <button type="submit">Show</button>
        </form>
      ) : null}
      <section class="table-wrap" tabindex={0} aria-labelledby="endpoints-h">
        <h2 id="endpoints-h">Endpoints</h2>
        {list.endpoints.length === 0 ? (
          <p class="muted">{query.after ? 'No more endpoints.' : 'No endpoint yet: add one below.'}</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Campaign</th>
                <th scope="col">Kind</th>
                <th scope="col">State</th>
                <th scope="col">Failing since (UTC)</th>
                <th scope="col" class="n">
                  Pending
                </th>
                <th scope="col">Last 24 h</th>
              </tr>
            </thead>
            <tbody>
              {list.endpoints.map((e) => (
                <tr>
                  <th scope="row" class="url">
                    <a href={`${pages.base}/endpoints/${e.id}`}>{e.url}</a>
                    {e.description ? <div class="muted">{e.description}</div> : null}
                  </th>
                  <td>{e.campaignName}</td>
                  <td>{e.kind}</td>
                  <td class={e.enabled ? undefined : 'bad'}>{stateOf(e)}</td>
                  <td class={e.failingSince ? 'bad' : undefined}>
                    {e.failingSince ? utcMinute(e.failingSince) : '–'}
                  </td>
                  <td class="n">{pendingText(e)}</td>
                  <td>
                    <Sparkline hours={e.health} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      {props.next ? <a href={props.next}>Next endpoints</a> : null}
      <section aria-labelledby="new-h" class="card">
        <h2 id="new-h">Add an endpoint</h2>
        {props.campaigns.length === 0 ? (
          <p class="muted">The account has no campaign yet: an endpoint belongs to a campaign.</p>
        ) : (
          <form method="post" action={`${pages.base}/endpoints`} class="stack">
            <Csrf pages={pages} />
            {pages.operator && pages.accountId ? (
              <input type="hidden" name="accountId" value={pages.accountId} />
            ) : null}
            <label for="new-campaign">Campaign</label>
            <select id="new-campaign" name="campaignId">
              {props.campaigns.map((x) => (
                <option value={x.id} selected={chosen === x.id}>
                  {x.name}
                </option>
              ))}
            </select>
            <EndpointFields idPrefix="new" values={props.draft} />
            <button type="submit">Add the endpoint</button>
          </form>
        )}
      </section>
    </pages.Frame>
  );
}

/** The campaigns the pages' forms offer: the account's, or the one campaign a portal link was made for. */
async function campaignsOffered(c: C, pages: WebhookPages, accountId: string) {
  const ctx = c.get('ctx');
  if (pages.campaignId) {
    const one = await getCampaignForOperator(ctx, pages.campaignId);
    return one.accountId === accountId ? [{ id: one.id, name: one.name }] : [];
  }
  const all = await listCampaignsForOperator(ctx, accountId, { limit: CAMPAIGNS_OFFERED });
  return all.campaigns.map((x) => ({ id: x.id, name: x.name }));
}

/**
 * The first page of the section: for the operator without an account, the accounts; else the account's
 * endpoints, in the pages' scope, filtered and paged by `query`.
 */
export async function renderEndpointList(
  c: C,
  pages: WebhookPages,
  query: ListQuery,
  extra: Flashes & { draft?: EndpointDraft & { campaignId?: string } } = {},
) {
  const ctx = c.get('ctx');
  if (!pages.accountId) {
    // Only the operator's pages ever list accounts; a business's pages always name theirs.
    if (!pages.operator) throw notFound('Account');
    const from = idOf(c.req.query('after'));
    const accounts = await listAccounts(ctx, { limit: ACCOUNTS_PAGE, ...(from ? { nextId: from } : {}) });
    const next =
      accounts.more && accounts.nextId ? pagedOn(pages.base, {}, {}, 'after', accounts.nextId) : undefined;
    return c.html(<AccountPicker pages={pages} accounts={accounts.accounts} next={next} {...extra} />);
  }
  const accountId = pages.accountId;
  const scope = pages.operator ? { accountId } : scopeOf(pages);
  const [account, campaigns, list] = await Promise.all([
    showAccount(ctx, accountId),
    campaignsOffered(c, pages, accountId),
    endpointsWithHealth(ctx, scope, {
      limit: ENDPOINTS_PAGE,
      ...(query.campaignId ? { campaignId: query.campaignId } : {}),
      ...(query.after ? { after: query.after } : {}),
    }),
  ]);
  const fixed: Record<string, string> = {
    ...(pages.operator ? { accountId } : {}),
    ...(query.campaignId ? { campaignId: query.campaignId } : {}),
  };
  const next = list.nextAfter ? pagedOn(pages.base, fixed, {}, 'after', list.nextAfter) : undefined;
  return c.html(
    <EndpointsPage
      pages={pages}
      accountName={account.name}
      campaigns={campaigns}
      list={list}
      query={query}
      next={next}
      {...extra}
    />,
  );
}

/** The list's query from the request: its campaign and its cursor, each an id or nothing. */
const listQueryOf = (c: C): ListQuery => {
  const campaignId = idOf(c.req.query('campaignId'));
  const after = idOf(c.req.query('after'));
  return { ...(campaignId ? { campaignId } : {}), ...(after ? { after } : {}) };
};

/** The section's first page (`GET …/webhooks`) and the form that adds an endpoint (`POST …/webhooks/endpoints`). */
export function registerEndpointList(app: Hono<AppEnv>, helpers: WebhookPageHelpers) {
  app.get('/webhooks', async (c) => {
    const pages = helpers.pagesOf(c);
    const query = listQueryOf(c);
    try {
      return await renderEndpointList(c, pages, pages.accountId ? query : {}, { notice: noticeOf(c) });
    } catch (err) {
      // A cursor or a campaign that is not (or no longer) there: the first page, saying so.
      return refused(c, err, (problem) =>
        renderEndpointList(c, pages.operator ? { ...pages, accountId: undefined } : pages, {}, { problem }),
      );
    }
  });

  app.post('/webhooks/endpoints', async (c) => {
    const mounted = helpers.pagesOf(c);
    const { form, draft, body } = await readEndpointForm(helpers, c);
    const pages = { ...mounted, accountId: mounted.accountId ?? idOf(form.accountId) };
    const campaignId = idOf(form.campaignId);
    const again = { ...draft, ...(campaignId ? { campaignId } : {}) };
    const render = (problem: string) => renderEndpointList(c, pages, {}, { problem, draft: again });
    try {
      if (!pages.accountId || !campaignId) {
        throw new DomainError('VALIDATION_ERROR', 'Pick a campaign of the account.');
      }
      const parsed = EndpointBody.safeParse(body);
      if (!parsed.success) return withStatus(await render(problemOf(parsed.error)), 400);
      // The operator's form names its account: the campaign must be that account's too.
      const scope = pages.operator ? { accountId: pages.accountId } : scopeOf(pages);
      const created = await createEndpoint(c.get('ctx'), campaignId, parsed.data, endpointOptions(c), scope);
      return renderEndpointList(
        c,
        pages,
        {},
        { notice: { text: `Endpoint ${created.url} added.`, secret: created.secret } },
      );
    } catch (err) {
      return refused(c, err, render);
    }
  });
}
