import type { z } from 'zod';
import { type EmittedEventType, EVENT_SCHEMAS } from './event-schemas';

/** What each event type tells a receiver, in a sentence: the catalog's text. */
export const EVENT_DESCRIPTIONS: Record<EmittedEventType, string> = {
  NEW_PARTICIPANT_ADDED: 'A participant joined a campaign (through the API, a form or an import).',
  PARTICIPANT_SUBMITTED_REWARD_FORM:
    "A participant sent a reward's form; it waits for review when the campaign asks.",
  REWARD_FORM_REVIEWED: 'A form submission was approved (its loyalty action counts) or rejected.',
  PARTICIPANT_UPDATED: "A participant's name, notes, metadata or counts changed.",
  PARTICIPANT_FRAUD_STATUS_UPDATED: "A participant's fraud risk level changed, by anti-fraud or by hand.",
  LOYALTY_ACTION_APPLIED: "A loyalty action was counted: the participant's counts after it.",
  PARTICIPANT_REACHED_A_GOAL: 'A participant unlocked a reward: what a fulfilment integration delivers.',
  PARTICIPANT_REWARD_FULFILLED: 'A reward was marked fulfilled (by its fulfilment endpoint or by hand).',
  PARTICIPANT_DELETED: 'A participant was deleted; their personal data is erased from every event.',
  PARTICIPANT_REWARD_DELETED: "A participant's reward was deleted (or refused on review).",
  CAMPAIGN_ENDED: 'A campaign was marked COMPLETE: no more loyalty actions count.',
  WEBHOOK_ENDPOINT_DISABLED:
    "One of the campaign's endpoints stopped receiving (it answered 410, or failed for days).",
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

export type CatalogEntry = { type: EmittedEventType; description: string; example: unknown };

/**
 * Every event type a webhook can carry, with its description and an example body as it is sent
 * (`{ type, timestamp, data }`), the data built from its schema.
 */
export function eventCatalog(): CatalogEntry[] {
  return (Object.keys(EVENT_SCHEMAS) as EmittedEventType[]).map((type) => ({
    type,
    description: EVENT_DESCRIPTIONS[type],
    example: { type, timestamp: EXAMPLE_TIME, data: exampleOf(EVENT_SCHEMAS[type]) },
  }));
}
