import type { Metadata, PointsConversion } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { MAX_POINTS_CONVERSIONS, pointsActionMetadata } from '../../rules/points';
import { recordQueuedActions } from '../ledger';

/** What a points conversion did: the metadata as it now stands and the loyalty actions it recorded. */
export type PointsConverted = { metadata: Metadata; actionIds: string[] };

/**
 * Converts a participant's points (contract section 4), inside the caller's transaction, which already holds
 * the participant's row lock and has just written the increment. One UPDATE counts in PostgreSQL how many
 * times the threshold fits in the stored value, numeric arithmetic, at most `MAX_POINTS_CONVERSIONS`, and
 * subtracts that many thresholds (the rest stored as a double, like every increment); then as many loyalty
 * actions for the conversion's reward go to the ledger, QUEUED, as a trigger's do. They commit with the
 * increment or not at all, and are handed to the worker after the commit. Answers null when the value no
 * longer reaches the threshold (nothing written).
 */
export async function convertPoints(
  tx: Ctx,
  campaignId: string,
  participantId: string,
  conversion: PointsConversion,
): Promise<PointsConverted | null> {
  const key = conversion.metadataKey;
  // The threshold as its shortest decimal, so that numeric arithmetic sees 0.1 and not 0.1000000000000000055.
  const threshold = String(conversion.threshold);
  const [row] = await tx.db.execute<{ n: number; metadata: Metadata }>(sql`
    with fits as (
      select least(floor((metadata -> ${key})::numeric / ${threshold}::numeric), ${MAX_POINTS_CONVERSIONS})::int as n
      from participants
      where id = ${participantId} and jsonb_typeof(metadata -> ${key}) = 'number'
    )
    update participants p
    set metadata = jsonb_set(
      p.metadata,
      array[${key}]::text[],
      to_jsonb(((p.metadata -> ${key})::numeric - fits.n * ${threshold}::numeric)::float8)
    )
    from fits
    where p.id = ${participantId} and fits.n >= 1
    returning fits.n, p.metadata`);
  if (!row) return null;
  const actions = await recordQueuedActions(
    tx,
    Array.from({ length: row.n }, () => ({
      campaignId,
      participantId,
      rewardId: conversion.rewardId,
      metadata: pointsActionMetadata(conversion),
    })),
  );
  return { metadata: row.metadata, actionIds: actions.map((a) => a.id) };
}
