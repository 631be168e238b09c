/** @jsxImportSource hono/jsx */
import type { AuditEntryView } from '@stampcard/core';
import { utcMinute } from './lib';

/** A changed value, cut short: the history shows what changed, the audit log keeps all of it. */
const shown = (v: unknown) => {
  const text = v === undefined ? '–' : JSON.stringify(v);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
};

const who = (e: AuditEntryView) =>
  e.actor.kind === 'OPERATOR'
    ? 'the operator API'
    : `${e.actor.kind === 'API_KEY' ? 'API key' : e.actor.kind === 'CONSOLE' ? 'the console' : 'the portal'} ${e.actor.id ?? ''}`.trim();

/**
 * An entity's history from the audit log, newest first: when, who, what, and each changed field's value before
 * and after (all of them for a creation or a deletion).
 */
export function History(props: { entries: AuditEntryView[]; what: string }) {
  return (
    <section class="table-wrap" tabindex={0} aria-labelledby="history-h">
      <h2 id="history-h">History</h2>
      {props.entries.length === 0 ? (
        <p class="muted">No change of this {props.what} is in the audit log.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">When (UTC)</th>
              <th scope="col">Who</th>
              <th scope="col">What</th>
              <th scope="col">Fields</th>
            </tr>
          </thead>
          <tbody>
            {props.entries.map((e) => {
              const fields = Object.keys({ ...(e.before ?? {}), ...(e.after ?? {}) });
              return (
                <tr>
                  <td>{utcMinute(e.at)}</td>
                  <td>
                    {who(e)}
                    {e.actor.via ? <span class="muted"> (through {e.actor.via})</span> : null}
                  </td>
                  <td>{e.action}</td>
                  <td>
                    {e.action === 'UPDATED' ? (
                      <ul class="plain">
                        {fields.map((f) => (
                          <li>
                            <code>{f}</code>: {shown(e.before?.[f])} → {shown(e.after?.[f])}
                          </li>
                        ))}
                      </ul>
                    ) : (
                      <span class="muted">{fields.length} fields</span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
