/** @jsxImportSource hono/jsx */
import {
  createAccount,
  createCampaign,
  DomainError,
  listAccounts,
  listCampaignsForOperator,
  showAccount,
  validationError,
} from '@stampcard/core';
import { CAMPAIGN_STATUSES, PLANS } from '@stampcard/db';
import type { Context, Hono } from 'hono';
import type { AppEnv } from '../env';
import { ERROR_STATUS } from '../lib/error-status';
import { AccountBody, CampaignBody } from '../routes/admin/schemas';
import { type Field, FieldInput, optionsOf, problemOf, readFields } from './fields';
import { type ConsoleHelpers, idOf, pagedOn } from './lib';
import { campaignPath } from './program-settings';
import { CONSOLE_PATH, CSRF_FIELD, Layout } from './views';

export const PROGRAMS_PATH = `${CONSOLE_PATH}/programs`;

/** Most accounts or campaigns a page lists (each list pages on with its own cursor). */
const PAGE = 25;

type C = Context<AppEnv>;
type Accounts = Awaited<ReturnType<typeof listAccounts>>;
type Account = Awaited<ReturnType<typeof showAccount>>;
type Campaigns = Awaited<ReturnType<typeof listCampaignsForOperator>>;
type Campaign = Campaigns['campaigns'][number];

const accountPath = (accountId: string) => `${PROGRAMS_PATH}?accountId=${encodeURIComponent(accountId)}`;
const number = (n: number) => n.toLocaleString('en-US');

function CampaignCard(props: { campaign: Campaign; csrf: string }) {
  const c = props.campaign;
  const h = `campaign-${c.id}`;
  return (
    <section class="card" aria-labelledby={h}>
      <h3 id={h}>
        {c.name} <span class="muted">({c.id})</span>
      </h3>
      <dl class="cards">
        <div>
          <dt>Status</dt>
          <dd class="word">{c.status}</dd>
        </div>
        <div>
          <dt>Participants</dt>
          <dd>{number(c.participantCount)}</dd>
        </div>
        <div>
          <dt>Loyalty actions</dt>
          <dd>{number(c.loyaltyActionCount)}</dd>
        </div>
        <div>
          <dt>Winners</dt>
          <dd>{number(c.winnerCount)}</dd>
        </div>
      </dl>
      <p>
        <a href={campaignPath(c.id)}>{`Every setting of ${c.name}, and its rewards`}</a>
      </p>
      <table>
        <caption class="muted">Rewards</caption>
        <thead>
          <tr>
            <th scope="col">Reward</th>
            <th scope="col" class="n">
              Actions per reward
            </th>
            <th scope="col" class="n">
              Limit per participant
            </th>
          </tr>
        </thead>
        <tbody>
          {c.rewards.map((r) => (
            <tr>
              <td>{r.title ?? r.id}</td>
              <td class="n">{r.conversionsRequired}</td>
              <td class="n">{r.limit === -1 ? 'unlimited' : r.limit}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function ProgramsPage(props: {
  csrf: string;
  accounts?: Accounts;
  account?: Account;
  campaigns?: Campaigns;
  problem?: string;
}) {
  const { account, campaigns, accounts } = props;
  return (
    <Layout title="Programs" current="programs" csrf={props.csrf}>
      <h1>Programs{account ? `: ${account.name}` : ''}</h1>
      {props.problem ? (
        <p class="error" role="alert">
          {props.problem}
        </p>
      ) : null}
      {account && campaigns ? (
        <>
          <p>
            <a href={PROGRAMS_PATH}>All accounts</a>
          </p>
          {campaigns.campaigns.length === 0 ? <p class="muted">No campaign yet.</p> : null}
          {campaigns.campaigns.map((c) => (
            <CampaignCard campaign={c} csrf={props.csrf} />
          ))}
          {campaigns.more && campaigns.nextId ? (
            <a href={pagedOn(PROGRAMS_PATH, { accountId: account.id }, {}, 'campaigns', campaigns.nextId)}>
              Next campaigns
            </a>
          ) : null}
          <section class="card" aria-labelledby="new-campaign-h">
            <h2 id="new-campaign-h">Add a campaign</h2>
            <form method="post" action={`${PROGRAMS_PATH}/accounts/${account.id}/campaigns`} class="stack">
              <input type="hidden" name={CSRF_FIELD} value={props.csrf} />
              {NEW_CAMPAIGN.map((field) => (
                <FieldInput
                  field={field}
                  value={field.name === 'status' ? 'IN_PROGRESS' : undefined}
                  idPrefix="nc"
                />
              ))}
              <button type="submit">Add the campaign</button>
            </form>
          </section>
        </>
      ) : accounts ? (
        <section aria-labelledby="accounts-h">
          <h2 id="accounts-h">Accounts</h2>
          {accounts.accounts.length === 0 ? <p class="muted">No account yet.</p> : null}
          <ul class="plain">
            {accounts.accounts.map((a) => (
              <li>
                <a href={accountPath(a.id)}>{a.name}</a> <span class="muted">({a.plan})</span>
              </li>
            ))}
          </ul>
          {accounts.more && accounts.nextId ? (
            <a href={pagedOn(PROGRAMS_PATH, {}, {}, 'after', accounts.nextId)}>Next accounts</a>
          ) : null}
          <section class="card" aria-labelledby="new-account-h">
            <h2 id="new-account-h">Add an account</h2>
            <form method="post" action={`${PROGRAMS_PATH}/accounts`} class="stack">
              <input type="hidden" name={CSRF_FIELD} value={props.csrf} />
              {NEW_ACCOUNT.map((field) => (
                <FieldInput
                  field={field}
                  value={field.name === 'plan' ? 'GROWTH' : undefined}
                  idPrefix="na"
                />
              ))}
              <button type="submit">Add the account</button>
            </form>
          </section>
        </section>
      ) : null}
    </Layout>
  );
}

async function accountView(c: C, accountId: string, after?: string) {
  const ctx = c.get('ctx');
  const account = await showAccount(ctx, accountId);
  const campaigns = await listCampaignsForOperator(ctx, accountId, {
    limit: PAGE,
    ...(after ? { nextId: after } : {}),
  });
  return { account, campaigns };
}

const NEW_ACCOUNT: Field[] = [
  { kind: 'text', name: 'name', label: 'Name', max: 255, required: true },
  { kind: 'select', name: 'plan', label: 'Plan', options: optionsOf(PLANS) },
  { kind: 'number', name: 'participantQuota', label: 'Participant quota (empty: none)', min: 0 },
];

const NEW_CAMPAIGN: Field[] = [
  { kind: 'text', name: 'name', label: 'Name', max: 255, required: true },
  { kind: 'text', name: 'currencyISO', label: 'Currency (ISO 4217, such as USD)', max: 3 },
  { kind: 'select', name: 'status', label: 'Status', options: optionsOf(CAMPAIGN_STATUSES) },
];

/**
 * `GET /console/programs`: the accounts, then an account's campaigns with their counters and rewards; an
 * account or a campaign added through the operator API's schemas and services (a campaign's other settings
 * and its rewards on its own page, `program-settings`).
 */
export function registerPrograms(app: Hono<AppEnv>, helpers: ConsoleHelpers) {
  const refused = async (c: C, err: unknown, accountId?: string) => {
    if (!(err instanceof DomainError) || err.code === 'UNAVAILABLE') throw err;
    const status = ERROR_STATUS[err.code] as 400 | 403 | 404 | 409 | 422;
    const view = accountId ? await accountView(c, accountId).catch(() => undefined) : undefined;
    return c.html(<ProgramsPage csrf={helpers.csrfOf(c)} {...view} problem={err.message} />, status);
  };

  app.get('/programs', async (c) => {
    const csrf = helpers.csrfOf(c);
    const accountId = c.req.query('accountId');
    if (accountId !== undefined) {
      const id = idOf(accountId);
      if (!id) return c.html(<ProgramsPage csrf={csrf} problem="That is not an account id." />, 400);
      try {
        return c.html(
          <ProgramsPage csrf={csrf} {...(await accountView(c, id, idOf(c.req.query('campaigns'))))} />,
        );
      } catch (err) {
        return refused(c, err);
      }
    }
    const after = idOf(c.req.query('after'));
    const accounts = await listAccounts(c.get('ctx'), { limit: PAGE, ...(after ? { nextId: after } : {}) });
    return c.html(<ProgramsPage csrf={csrf} accounts={accounts} />);
  });

  app.post('/programs/accounts', async (c) => {
    try {
      const values = readFields(NEW_ACCOUNT, await helpers.formOf(c));
      const body = AccountBody.safeParse({
        ...values,
        participantQuota: values.participantQuota ?? undefined,
      });
      if (!body.success) throw validationError([], problemOf(body.error));
      const account = await createAccount(c.get('ctx'), body.data);
      return c.redirect(accountPath(account.id), 303);
    } catch (err) {
      return refused(c, err);
    }
  });

  app.post('/programs/accounts/:accountId/campaigns', async (c) => {
    const accountId = idOf(c.req.param('accountId'));
    try {
      if (!accountId) throw new DomainError('NOT_FOUND', 'No such account.');
      const values = readFields(NEW_CAMPAIGN, await helpers.formOf(c));
      const body = CampaignBody.safeParse({ ...values, currencyISO: values.currencyISO ?? undefined });
      if (!body.success) throw validationError([], problemOf(body.error));
      const campaign = await createCampaign(c.get('ctx'), accountId, body.data);
      return c.redirect(campaignPath(campaign.id), 303);
    } catch (err) {
      return refused(c, err, accountId);
    }
  });
}
