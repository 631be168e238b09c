import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EVENT_SCHEMAS, EVENT_TYPES, eventCatalog, exampleOf, TEST_EVENT_DATA } from '../src/index';

describe('the event catalog', () => {
  it('has every event type, each with a description and an example its own schema accepts', () => {
    const catalog = eventCatalog();
    expect(catalog.map((e) => e.type).sort()).toEqual([...EVENT_TYPES, 'WEBHOOK_TEST'].sort());
    for (const entry of catalog) {
      expect(entry.description.length).toBeGreaterThan(10);
      const body = entry.example as { type: string; timestamp: number; data: unknown };
      expect(body.type).toBe(entry.type);
      const schema = entry.type === 'WEBHOOK_TEST' ? TEST_EVENT_DATA : EVENT_SCHEMAS[entry.type];
      expect(schema.safeParse(body.data).error).toBeUndefined();
    }
  });

  it('fills optional and nullable fields, picks the first enum value, and refuses a kind it does not know', () => {
    const schema = z.strictObject({
      email: z.string().optional(),
      level: z.enum(['LOW', 'HIGH']).nullable(),
      createdAt: z.number().int(),
      tags: z.array(z.string()),
    });
    expect(exampleOf(schema)).toEqual({
      email: 'ada@example.com',
      level: 'LOW',
      createdAt: Date.UTC(2026, 0, 15, 9, 30),
      tags: ['tags text'],
    });
    expect(() => exampleOf(z.date())).toThrow(/date has no example/);
  });
});
