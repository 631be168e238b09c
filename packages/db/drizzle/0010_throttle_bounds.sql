DROP INDEX "webhook_attempts_message_idx";--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "throttles" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "throttled_since" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_messages" ADD COLUMN "attempts_pruned" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "webhook_attempts_message_idx" ON "webhook_attempts" USING btree ("message_id","attempted_at","id");--> statement-breakpoint
-- Hand-written: logs written before they were bounded (a receiver looping on `Retry-After: 0` left thousands
-- of rows per message) keep their first and last 10 attempts (core's ATTEMPT_LOG_KEEP), and each message
-- counts the ones removed. Only messages with more than 20 rows are touched.
WITH "ranked" AS (
  SELECT "id",
    row_number() OVER (PARTITION BY "message_id" ORDER BY "attempted_at", "id") AS "from_start",
    row_number() OVER (PARTITION BY "message_id" ORDER BY "attempted_at" DESC, "id" DESC) AS "from_end"
  FROM "webhook_attempts"
  WHERE "message_id" IN (
    SELECT "message_id" FROM "webhook_attempts" GROUP BY "message_id" HAVING count(*) > 20
  )
), "pruned" AS (
  DELETE FROM "webhook_attempts" "a" USING "ranked" "r"
  WHERE "a"."id" = "r"."id" AND "r"."from_start" > 10 AND "r"."from_end" > 10
  RETURNING "a"."message_id"
)
UPDATE "webhook_messages" "m" SET "attempts_pruned" = "m"."attempts_pruned" + "p"."n"
FROM (SELECT "message_id", count(*)::int AS "n" FROM "pruned" GROUP BY "message_id") "p"
WHERE "m"."id" = "p"."message_id";
