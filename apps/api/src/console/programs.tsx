/** @jsxImportSource hono/jsx */
import {
  DomainError,
  getCampaignForOperator,
  listAccounts,
  listCampaignsForOperator,
  showAccount,
  updateCampaign,
} from '@stampcard/core';
import { CAMPAIGN_STATUSES } from '@stampcard/db';
import type { Context, Hono } from 'hono';
import type { AppEnv } from '../env';
import { ERROR_STATUS } from '../lib/error-status';
import { CampaignPatch } from '../routes/admin/schemas';
import { type ConsoleHelpers, idOf, pagedOn } from './lib';
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
      <form method="post" action={`${PROGRAMS_PATH}/campaigns/${c.id}`} class="inline">
        <input type="hidden" name={CSRF_FIELD} value={props.csrf} />
        <label for={`name-${c.id}`}>Name</label>
        <input id={`name-${c.id}`} name="name" value={c.name} required maxlength={255} />
        <label for={`status-${c.id}`}>Status</label>
        <select id={`status-${c.id}`} name="status">
          {CAMPAIGN_STATUSES.map((s) => (
            <option value={s} selected={c.status === s}>
              {s}
            </option>
          ))}
        </select>
        <button type="submit">Save {c.name}</button>
      </form>
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

/** `GET /console/programs`: the accounts, then an account's campaigns with their counters and rewards. */
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

  // A campaign's name and status, checked by the operator API's own schema and changed by its own service
  // (COMPLETE records CAMPAIGN_ENDED, as `PATCH /admin/v1/campaigns/{id}` does).
  app.post('/programs/campaigns/:campaignId', async (c) => {
    const campaignId = idOf(c.req.param('campaignId'));
    if (!campaignId)
      return c.html(<ProgramsPage csrf={helpers.csrfOf(c)} problem="That is not a campaign id." />, 400);
    const form = await helpers.formOf(c);
    let accountId: string | undefined;
    try {
      accountId = (await getCampaignForOperator(c.get('ctx'), campaignId)).accountId;
      const patch = CampaignPatch.safeParse({ name: form.name, status: form.status });
      if (!patch.success) {
        const problem = `Not changed: ${patch.error.issues.map((i) => `${i.path.join('.') || 'form'} ${i.message}`).join('; ')}`;
        return c.html(
          <ProgramsPage csrf={helpers.csrfOf(c)} {...(await accountView(c, accountId))} problem={problem} />,
          400,
        );
      }
      await updateCampaign(c.get('ctx'), campaignId, patch.data);
      return c.redirect(accountPath(accountId), 303);
    } catch (err) {
      return refused(c, err, accountId);
    }
  });
}
