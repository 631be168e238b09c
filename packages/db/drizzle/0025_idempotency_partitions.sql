-- Stored Idempotency-Key answers partitioned by day of started_at (docs/operating.md, "Retention"): the worker
-- drops a day once every key of it has expired (24 h), instead of the batch DELETE that purged them. The
-- existing table becomes the first partition as it is, "idempotency_keys_legacy", holding every time up to the
-- end of the current day; it goes a day later. A key is unique among its live rows by an advisory lock on the
-- key (claimIdempotencyKey), no more by the primary key, which must now hold the partition key.
--
-- Upgrading: API processes of the version before this one claim keys with ON CONFLICT (scope, key), which no
-- index answers any more: their requests that carry an Idempotency-Key fail (500) until they are replaced.
-- Migrate, then restart the API (`npm start` does both in that order).
CREATE FUNCTION pg_temp.stampcard_partition_by_day(parent text, col text, ahead int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  legacy text := parent || '_legacy';
  newest timestamptz;
  cutover timestamptz;
  start timestamptz;
BEGIN
  EXECUTE format('SELECT max(%I) FROM %I', col, legacy) INTO newest;
  cutover := date_trunc('day', greatest(now(), coalesce(newest, now())), 'UTC') + interval '1 day';
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', parent, legacy, cutover);
  FOR i IN 0..ahead LOOP
    start := cutover + interval '1 day' * i;
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
      parent || '_' || to_char(start AT TIME ZONE 'UTC', 'YYYYMMDD'), parent, start, start + interval '1 day');
  END LOOP;
  EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', parent || '_default', parent);
END $$;--> statement-breakpoint
ALTER TABLE "idempotency_keys" RENAME TO "idempotency_keys_legacy";--> statement-breakpoint
ALTER TABLE "idempotency_keys_legacy" DROP CONSTRAINT "idempotency_keys_pk";--> statement-breakpoint
ALTER TABLE "idempotency_keys_legacy" ADD CONSTRAINT "idempotency_keys_legacy_pk" PRIMARY KEY ("scope", "key", "started_at");--> statement-breakpoint
DROP INDEX "idempotency_keys_expires_idx";--> statement-breakpoint
ALTER INDEX "idempotency_keys_subjects_idx" RENAME TO "idempotency_keys_legacy_subjects_idx";--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"scope" text NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"state" text NOT NULL,
	"claim_token" text NOT NULL,
	"response_status" integer,
	"response_content_type" text,
	"response_headers" jsonb,
	"response_body" text,
	"started_at" timestamp with time zone NOT NULL,
	"locked_until" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"subjects" text[],
	CONSTRAINT "idempotency_keys_pk" PRIMARY KEY("scope","key","started_at")
) PARTITION BY RANGE ("started_at");--> statement-breakpoint
CREATE INDEX "idempotency_keys_subjects_idx" ON "idempotency_keys" USING gin ("subjects") WHERE "idempotency_keys"."subjects" is not null;--> statement-breakpoint
SELECT pg_temp.stampcard_partition_by_day('idempotency_keys', 'started_at', 2);
