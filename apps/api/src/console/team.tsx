/** @jsxImportSource hono/jsx */
import {
  createApiKey,
  DomainError,
  listAccounts,
  listApiKeys,
  listUsers,
  revokeApiKey,
  showAccount,
  showApiKey,
  showUser,
  updateUser,
} from '@stampcard/core';
import type { Context, Hono } from 'hono';
import type { AppEnv } from '../env';
import { ERROR_STATUS } from '../lib/error-status';
import { UserPatch } from '../routes/admin/schemas';
import { type ConsoleHelpers, idOf, pagedOn, utcMinute } from './lib';
import { CONSOLE_PATH, CSRF_FIELD, Layout } from './views';

export const TEAM_PATH = `${CONSOLE_PATH}/team`;

/** Most rows a team page lists at once: accounts, users, keys (each list pages on with its own cursor). */
const PAGE = 50;

type C = Context<AppEnv>;
type Account = Awaited<ReturnType<typeof showAccount>>;
type Users = Awaited<ReturnType<typeof listUsers>>;
type Keys = Awaited<ReturnType<typeof listApiKeys>>;

const accountPath = (accountId: string) => `${TEAM_PATH}?accountId=${encodeURIComponent(accountId)}`;

/** Where the account page's two lists stand: the `nextId` each pages on from (absent: its first page). */
type Cursors = { users?: string; keys?: string };

function Csrf(props: { csrf: string }) {
  return <input type="hidden" name={CSRF_FIELD} value={props.csrf} />;
}

function Problem(props: { message?: string }) {
  return props.message ? (
    <p class="error" role="alert">
      {props.message}
    </p>
  ) : null;
}

function AccountList(props: { accounts: Awaited<ReturnType<typeof listAccounts>> }) {
  const { accounts, nextId, more } = props.accounts;
  return (
    <section aria-labelledby="accounts-h">
      <h2 id="accounts-h">Accounts</h2>
      {accounts.length === 0 ? <p class="muted">No account yet.</p> : null}
      <ul class="plain">
        {accounts.map((a) => (
          <li>
            <a href={accountPath(a.id)}>{a.name}</a> <span class="muted">({a.plan})</span>
          </li>
        ))}
      </ul>
      {more && nextId ? <a href={`${TEAM_PATH}?after=${encodeURIComponent(nextId)}`}>Next accounts</a> : null}
    </section>
  );
}

function UserRows(props: { users: Users; csrf: string; next?: string }) {
  return (
    <section class="table-wrap" tabindex={0} aria-labelledby="users-h">
      <h2 id="users-h">Team</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Email</th>
            <th scope="col">Role and campaign access</th>
          </tr>
        </thead>
        <tbody>
          {props.users.users.map((u) => (
            <tr>
              <td>{u.email}</td>
              <td>
                <form method="post" action={`${TEAM_PATH}/users/${u.id}`} class="inline">
                  <Csrf csrf={props.csrf} />
                  <label for={`role-${u.id}`}>Role</label>
                  <select id={`role-${u.id}`} name="role">
                    {(['ADMIN', 'MEMBER'] as const).map((r) => (
                      <option value={r} selected={u.role === r}>
                        {r}
                      </option>
                    ))}
                  </select>
                  <label for={`campaigns-${u.id}`}>Campaigns (ids, comma-separated; a MEMBER's access)</label>
                  <input id={`campaigns-${u.id}`} name="campaignIds" value={u.campaignIds.join(', ')} />
                  <button type="submit">Save {u.email}</button>
                </form>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.next ? <a href={props.next}>Next team members</a> : null}
    </section>
  );
}

function KeyRows(props: { keys: Keys; users: Users; csrf: string; next?: string }) {
  const email = new Map(props.users.users.map((u) => [u.id, u.email]));
  return (
    <section class="table-wrap" tabindex={0} aria-labelledby="keys-h">
      <h2 id="keys-h">API keys</h2>
      <form method="post" action={`${TEAM_PATH}/keys`} class="inline">
        <Csrf csrf={props.csrf} />
        <label for="key-user">New key for</label>
        <select id="key-user" name="userId" required>
          {props.users.users.map((u) => (
            <option value={u.id}>{u.email}</option>
          ))}
        </select>
        <button type="submit">Create a key</button>
      </form>
      <table>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Team member</th>
            <th scope="col">Created (UTC)</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {props.keys.apiKeys.map((k) => (
            <tr>
              <td>
                <code>{k.keyPrefix}…</code>
              </td>
              <td>{email.get(k.userId) ?? k.userId}</td>
              <td>{utcMinute(k.createdAt)}</td>
              <td>
                {k.revokedAt !== null ? (
                  `revoked ${utcMinute(k.revokedAt)}`
                ) : (
                  <form method="post" action={`${TEAM_PATH}/keys/${k.id}/revoke`} class="inline">
                    <Csrf csrf={props.csrf} />
                    <button type="submit">Revoke {k.keyPrefix}…</button>
                  </form>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.next ? <a href={props.next}>Next keys</a> : null}
    </section>
  );
}

export function TeamPage(props: {
  csrf: string;
  accounts?: Awaited<ReturnType<typeof listAccounts>>;
  account?: Account;
  users?: Users;
  keys?: Keys;
  cursors?: Cursors;
  problem?: string;
  createdKey?: { key: string; keyPrefix: string; email: string };
}) {
  const { account, users, keys } = props;
  return (
    <Layout title="Team and keys" current="team" csrf={props.csrf}>
      <h1>Team and keys{account ? `: ${account.name}` : ''}</h1>
      <Problem message={props.problem} />
      {props.createdKey ? (
        <section class="notice" aria-labelledby="new-key-h">
          <h2 id="new-key-h">New key for {props.createdKey.email}</h2>
          <p>Copy it now: it is shown this once, and only its first characters are kept to recognise it.</p>
          <p>
            <code id="new-key">{props.createdKey.key}</code>
          </p>
        </section>
      ) : null}
      {account && users && keys ? (
        <>
          <p>
            <a href={TEAM_PATH}>All accounts</a>
          </p>
          <UserRows
            users={users}
            csrf={props.csrf}
            next={nextOf(account.id, props.cursors, 'users', users)}
          />
          <KeyRows
            keys={keys}
            users={users}
            csrf={props.csrf}
            next={nextOf(account.id, props.cursors, 'keys', keys)}
          />
        </>
      ) : props.accounts ? (
        <AccountList accounts={props.accounts} />
      ) : null}
    </Layout>
  );
}

/** The link to a list's next page, when it has one. */
function nextOf(
  accountId: string,
  cursors: Cursors = {},
  list: keyof Cursors,
  page: { more: boolean; nextId: string | null },
) {
  return page.more && page.nextId ? pagedOn(TEAM_PATH, { accountId }, cursors, list, page.nextId) : undefined;
}

/** The account page's lists: its team and its keys, each a page of at most `PAGE` from its cursor. */
async function accountView(c: C, accountId: string, cursors: Cursors = {}) {
  const ctx = c.get('ctx');
  const account = await showAccount(ctx, accountId);
  const [users, keys] = await Promise.all([
    listUsers(ctx, accountId, { limit: PAGE, ...(cursors.users ? { nextId: cursors.users } : {}) }),
    listApiKeys(ctx, { accountId, limit: PAGE, ...(cursors.keys ? { nextId: cursors.keys } : {}) }),
  ]);
  return { account, users, keys, cursors };
}

/** A refusal of core's, shown on the page with its status; anything else is the app's error handler's. */
async function refused(c: C, helpers: ConsoleHelpers, err: unknown, accountId: string | undefined) {
  if (!(err instanceof DomainError) || err.code === 'UNAVAILABLE') throw err;
  const status = ERROR_STATUS[err.code] as 400 | 402 | 403 | 404 | 409 | 422;
  const view = accountId ? await accountView(c, accountId).catch(() => undefined) : undefined;
  return c.html(<TeamPage csrf={helpers.csrfOf(c)} {...view} problem={err.message} />, status);
}

/** A MEMBER's campaign list as typed in the form: ids separated by commas or spaces. */
function campaignIdsOf(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  return text.split(/[\s,]+/).filter((s) => s !== '');
}

/** `GET /console/team`, its forms' posts: the accounts, an account's team and keys, create, change, revoke. */
export function registerTeam(app: Hono<AppEnv>, helpers: ConsoleHelpers) {
  app.get('/team', async (c) => {
    const csrf = helpers.csrfOf(c);
    const accountId = c.req.query('accountId');
    if (accountId !== undefined) {
      const id = idOf(accountId);
      if (!id) return c.html(<TeamPage csrf={csrf} problem="That is not an account id." />, 400);
      try {
        const cursors = { users: idOf(c.req.query('users')), keys: idOf(c.req.query('keys')) };
        return c.html(<TeamPage csrf={csrf} {...(await accountView(c, id, cursors))} />);
      } catch (err) {
        return refused(c, helpers, err, undefined);
      }
    }
    const after = idOf(c.req.query('after'));
    const accounts = await listAccounts(c.get('ctx'), { limit: PAGE, ...(after ? { nextId: after } : {}) });
    return c.html(<TeamPage csrf={csrf} accounts={accounts} />);
  });

  app.post('/team/keys', async (c) => {
    const userId = idOf((await helpers.formOf(c)).userId);
    if (!userId) return c.html(<TeamPage csrf={helpers.csrfOf(c)} problem="Choose a team member." />, 400);
    let accountId: string | undefined;
    try {
      const user = await showUser(c.get('ctx'), userId);
      accountId = user.accountId;
      const created = await createApiKey(c.get('ctx'), userId);
      const view = await accountView(c, user.accountId);
      const createdKey = { key: created.key, keyPrefix: created.keyPrefix, email: user.email };
      return c.html(<TeamPage csrf={helpers.csrfOf(c)} {...view} createdKey={createdKey} />, 201);
    } catch (err) {
      return refused(c, helpers, err, accountId);
    }
  });

  app.post('/team/keys/:keyId/revoke', async (c) => {
    const keyId = idOf(c.req.param('keyId'));
    if (!keyId) return c.html(<TeamPage csrf={helpers.csrfOf(c)} problem="That is not a key id." />, 400);
    let accountId: string | undefined;
    try {
      const key = await showApiKey(c.get('ctx'), keyId);
      accountId = (await showUser(c.get('ctx'), key.userId)).accountId;
      await revokeApiKey(c.get('ctx'), keyId);
      return c.redirect(accountPath(accountId), 303);
    } catch (err) {
      return refused(c, helpers, err, accountId);
    }
  });

  app.post('/team/users/:userId', async (c) => {
    const userId = idOf(c.req.param('userId'));
    if (!userId) return c.html(<TeamPage csrf={helpers.csrfOf(c)} problem="That is not a user id." />, 400);
    const form = await helpers.formOf(c);
    let accountId: string | undefined;
    try {
      accountId = (await showUser(c.get('ctx'), userId)).accountId;
      const patch = UserPatch.safeParse({ role: form.role, campaignIds: campaignIdsOf(form.campaignIds) });
      if (!patch.success) {
        const problem = `Not changed: ${patch.error.issues.map((i) => `${i.path.join('.') || 'form'} ${i.message}`).join('; ')}`;
        return c.html(
          <TeamPage csrf={helpers.csrfOf(c)} {...(await accountView(c, accountId))} problem={problem} />,
          400,
        );
      }
      await updateUser(c.get('ctx'), userId, patch.data);
      return c.redirect(accountPath(accountId), 303);
    } catch (err) {
      return refused(c, helpers, err, accountId);
    }
  });
}
