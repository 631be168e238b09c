import type { z } from 'zod';
import { type EmittedEventType, EVENT_SCHEMAS, TEST_EVENT_DATA } from './event-schemas';
import { TEST_EVENT_TYPE } from './services/webhooks/endpoints';

/**
 * What each webhook means to its receiver, for the OpenAPI document and the console's catalog; a type added to
 * the catalogue must be described here (the type says so).
 */
export const EVENT_DESCRIPTIONS: Record<EmittedEventType | typeof TEST_EVENT_TYPE, string> = {
  NEW_PARTICIPANT_ADDED:
    'A participant joined the campaign: added through the API, or by a loyalty action that named a new email.',
  PARTICIPANT_UPDATED:
    'The API changed a participant: `changed` names the fields whose value changed, `participant` is as stored after.',
  PARTICIPANT_FRAUD_STATUS_UPDATED:
    "A participant's fraud risk level or reason code changed (e.g. set by hand: `MANUAL_UPDATE`); `previous` is what it had before.",
  LOYALTY_ACTION_APPLIED:
    'A worker applied a loyalty action: its counts are in; `unlockedRewards` lists the rewards it unlocked, if any.',
  PARTICIPANT_REACHED_A_GOAL:
    'A reward unlocked and is approved (at once, or later by manual review): `reward` is the whole ParticipantReward with its Reward. A `FULFILMENT` endpoint that answers 2xx marks it FULFILLED.',
  PARTICIPANT_REWARD_FULFILLED:
    'A reward became FULFILLED (a `FULFILMENT` endpoint answered 2xx to its goal, or the API fulfilled it).',
  PARTICIPANT_SUBMITTED_REWARD_FORM: "A participant sent a reward's form: it waits for review (UNREVIEWED).",
  REWARD_FORM_REVIEWED:
    'A form submission was reviewed: `approved` true counted a loyalty action for its reward (`loyaltyActionId`), false unlocked nothing.',
  PARTICIPANT_DELETED:
    'A participant was deleted: ids and counts only, no personal data (their past events are erased from the feed and from messages not yet delivered).',
  PARTICIPANT_REWARD_DELETED: 'An earned reward not yet approved was removed: ids only.',
  CAMPAIGN_ENDED: 'The campaign became COMPLETE.',
  WEBHOOK_ENDPOINT_DISABLED:
    "An endpoint of the campaign stopped receiving (it answered 410, or failed for 5 days): named by its id and its URL's host only.",
  [TEST_EVENT_TYPE]:
    'The operator API\'s "send a test" (`POST /admin/v1/webhook-endpoints/{id}/test`): to that endpoint only, whatever event types it asked for.',
};

/** A fixed time in examples: 2026-01-15 09:30 UTC. */
const EXAMPLE_TIME = Date.UTC(2026, 0, 15, 9, 30);

/** A plausible text for a field, by its name: ids look like ids, emails like emails. */
function exampleText(key: string): string {
  const k = key.toLowerCase();
  if (k.includes('email')) return 'ada@example.com';
  if (k === 'id' || k.endsWith('id')) return 'x7k2m9qa';
  if (k.includes('url')) return 'https://example.com/reward';
  if (k.includes('currency')) return 'USD';
  if (k.includes('month')) return '2026-01';
  if (k.includes('host')) return 'hooks.example.com';
  if (k.includes('firstname')) return 'Ada';
  if (k.includes('lastname')) return 'Lovelace';
  return key ? `${key} text` : 'text';
}

/**
 * A value `schema` accepts, built from the schema itself (so the example can never drift from what is sent):
 * every optional field present, the first value of each enum and union, one item in each array and record,
 * times as a fixed instant. Only the zod kinds the event schemas use are known; another kind is an error.
 */
export function exampleOf(schema: z.ZodType, key = ''): unknown {
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
  switch (def.type) {
    case 'object': {
      const shape = def.shape as Record<string, z.ZodType>;
      const out: Record<string, unknown> = Object.create(null);
      for (const [name, field] of Object.entries(shape)) out[name] = exampleOf(field, name);
      return { ...out };
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'readonly':
      return exampleOf(def.innerType as z.ZodType, key);
    case 'string':
      return exampleText(key);
    case 'number': {
      const k = key.toLowerCase();
      return k.endsWith('at') || k.includes('time') || k.includes('since') ? EXAMPLE_TIME : 1;
    }
    case 'boolean':
      return true;
    case 'enum':
      return Object.values(def.entries as Record<string, string>)[0];
    case 'literal':
      return (def.values as unknown[])[0];
    case 'array':
      return [exampleOf(def.element as z.ZodType, key)];
    case 'record':
      return { [key === 'metadata' ? 'tier' : 'x7k2m9qa']: exampleOf(def.valueType as z.ZodType, key) };
    case 'union':
      return exampleOf((def.options as z.ZodType[])[0]!, key);
    case 'null':
      return null;
    default:
      throw new Error(`exampleOf: zod kind ${def.type} has no example`);
  }
}

export type CatalogEntry = {
  type: EmittedEventType | typeof TEST_EVENT_TYPE;
  description: string;
  example: unknown;
};

/**
 * Every event type a webhook can carry (the test event last), with its description and an example body as it
 * is sent (`{ type, timestamp, data }`), the data built from its schema.
 */
export function eventCatalog(): CatalogEntry[] {
  const schemas: [CatalogEntry['type'], z.ZodType][] = [
    ...(Object.entries(EVENT_SCHEMAS) as [EmittedEventType, z.ZodType][]),
    [TEST_EVENT_TYPE, TEST_EVENT_DATA],
  ];
  return schemas.map(([type, schema]) => ({
    type,
    description: EVENT_DESCRIPTIONS[type],
    example: { type, timestamp: EXAMPLE_TIME, data: exampleOf(schema) },
  }));
}
