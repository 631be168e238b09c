import type { PointsConversion } from '@stampcard/db';

/**
 * Most loyalty actions one participant update converts points into. What the threshold would fit past it
 * stays in the value, and the next `metadataIncrement` of the key converts it (up to this many again), so a
 * huge increment cannot flood the ledger and no point is lost.
 */
export const MAX_POINTS_CONVERSIONS = 100;

/** Keys a campaign's `pointsConversion.metadataKey` may not be: the ones no body may carry as a key. */
export const FORBIDDEN_METADATA_KEYS: ReadonlySet<string> = new Set([
  '__proto__',
  'constructor',
  'prototype',
]);

/** The `metadata` a points conversion's loyalty action is recorded with in the ledger: where it came from. */
export const pointsActionMetadata = (c: PointsConversion) => ({
  source: 'POINTS_CONVERSION',
  metadataKey: c.metadataKey,
  threshold: c.threshold,
});

/**
 * The points conversion a participant update must run, if any (contract section 4): the campaign has a
 * `pointsConversion` and is IN_PROGRESS, the update's `metadataIncrement` named its key (a plain `metadata`
 * set never converts), and the value after the increment is a number that reached the threshold. How many
 * times the threshold fits is counted by PostgreSQL, in numeric arithmetic (`floor(0.3 / 0.1)` is 3 there).
 *
 * Comparing here is exact: the value is the very double PostgreSQL stored, and the threshold a double too.
 */
export function dueConversion(
  campaign: { status: string; pointsConversion: PointsConversion | null },
  incrementedKeys: readonly string[],
  metadataAfter: Readonly<Record<string, unknown>> | null,
): PointsConversion | null {
  const conversion = campaign.pointsConversion;
  if (!conversion || campaign.status !== 'IN_PROGRESS') return null;
  if (!incrementedKeys.includes(conversion.metadataKey)) return null;
  if (!metadataAfter || !Object.hasOwn(metadataAfter, conversion.metadataKey)) return null;
  const value = metadataAfter[conversion.metadataKey];
  return typeof value === 'number' && value >= conversion.threshold ? conversion : null;
}
