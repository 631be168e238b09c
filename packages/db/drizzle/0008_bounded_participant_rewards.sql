ALTER TABLE "participants" ADD COLUMN "reward_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "participant_rewards_participant_created_idx" ON "participant_rewards" USING btree ("participant_id","created_at",("id" collate "C"));--> statement-breakpoint
-- Backfill: every participant's rewards counted once, in one pass over the table (not a count per participant).
UPDATE "participants" AS p SET "reward_count" = c.n
FROM (SELECT "participant_id", count(*)::integer AS n FROM "participant_rewards" GROUP BY "participant_id") AS c
WHERE p."id" = c."participant_id";
