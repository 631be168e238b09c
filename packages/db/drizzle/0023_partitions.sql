-- Storage per action, and tables that do not grow forever (docs/operating.md, "Retention").
--
-- 1. Indexes that did not earn their place: events (campaign_id, seq), which the feed's (campaign_id, tx_id,
--    seq) made redundant, and the ledger's btrees on created_at and applied_at, which only find the last hour
--    for the console: BRIN indexes (rows arrive in time order) do that in a few pages.
DROP INDEX "events_campaign_seq_idx";--> statement-breakpoint
DROP INDEX "loyalty_actions_created_idx";--> statement-breakpoint
DROP INDEX "loyalty_actions_applied_idx";--> statement-breakpoint
CREATE INDEX "loyalty_actions_created_brin" ON "loyalty_actions" USING brin ("created_at");--> statement-breakpoint
CREATE INDEX "loyalty_actions_applied_brin" ON "loyalty_actions" USING brin ("applied_at");--> statement-breakpoint
-- 2. The append-only tables become partitioned by time: events, webhook messages (by their event's time) and
--    attempts by week, the audit log by month. Each existing table becomes the first partition as it is (no row
--    is copied), "<table>_legacy", holding every time up to the end of the current week (month); the worker
--    makes the next partitions ahead and drops a partition once all of it is past retention, the legacy one
--    included. What this costs a database in downtime is the few index builds below (BENCHMARKS.md,
--    "Partitioning an existing database", measures it on a million rows each).
CREATE FUNCTION pg_temp.stampcard_partition(parent text, col text, unit text, ahead int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  legacy text := parent || '_legacy';
  newest timestamptz;
  cutover timestamptz;
  step interval := ('1 ' || unit)::interval;
  start timestamptz;
BEGIN
  EXECUTE format('SELECT max(%I) FROM %I', col, legacy) INTO newest;
  -- The first period the legacy partition does not cover: after now and after its newest row (-infinity in
  -- the key of rows that have no time of their own, the messages made before this).
  cutover := date_trunc(unit, greatest(now(), coalesce(newest, now())), 'UTC') + step;
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', parent, legacy, cutover);
  FOR i IN 0..ahead LOOP
    start := cutover + step * i;
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
      parent || '_' || to_char(start AT TIME ZONE 'UTC', CASE unit WHEN 'week' THEN 'YYYYMMDD' ELSE 'YYYYMM' END),
      parent, start, start + step);
  END LOOP;
  -- A row whose period has no partition yet (the worker away for weeks) is kept here rather than refused; the
  -- worker moves it to its partition when it makes that one. Normally empty.
  EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', parent || '_default', parent);
END $$;--> statement-breakpoint
-- Events: no primary key any more (a partitioned table's unique index must hold its partition key; ids are
-- unique by construction); look-ups by id through a plain index, the one index built on the existing rows.
ALTER TABLE "events" RENAME TO "events_legacy";--> statement-breakpoint
ALTER TABLE "events_legacy" DROP CONSTRAINT "events_pkey";--> statement-breakpoint
ALTER TABLE "events_legacy" RENAME CONSTRAINT "events_campaign_id_campaigns_id_fk" TO "events_legacy_campaign_id_fk";--> statement-breakpoint
ALTER INDEX "events_campaign_tx_seq_idx" RENAME TO "events_legacy_campaign_id_tx_id_seq_idx";--> statement-breakpoint
ALTER INDEX "events_undispatched_idx" RENAME TO "events_legacy_seq_idx";--> statement-breakpoint
ALTER INDEX "events_participant_idx" RENAME TO "events_legacy_expr_seq_idx";--> statement-breakpoint
CREATE INDEX "events_legacy_id_idx" ON "events_legacy" USING btree ("id");--> statement-breakpoint
DROP INDEX "events_id_uq";--> statement-breakpoint
CREATE TABLE "events" (
	"seq" bigint DEFAULT nextval('events_seq_seq'::regclass) NOT NULL,
	"id" text NOT NULL,
	"campaign_id" text NOT NULL,
	"type" text NOT NULL,
	"data" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"dispatched_at" timestamp with time zone,
	"tx_id" xid8 DEFAULT pg_current_xact_id() NOT NULL
) PARTITION BY RANGE ("created_at");--> statement-breakpoint
ALTER SEQUENCE "events_seq_seq" OWNED BY "events"."seq";--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "events_id_idx" ON "events" USING btree ("id");--> statement-breakpoint
CREATE INDEX "events_campaign_tx_seq_idx" ON "events" USING btree ("campaign_id","tx_id","seq");--> statement-breakpoint
CREATE INDEX "events_undispatched_idx" ON "events" USING btree ("seq") WHERE "events"."dispatched_at" is null;--> statement-breakpoint
CREATE INDEX "events_participant_idx" ON "events" USING btree (("data" #>> '{participant,id}'),"seq") WHERE ("events"."data" #>> '{participant,id}') is not null;--> statement-breakpoint
SELECT pg_temp.stampcard_partition('events', 'created_at', 'week', 2);--> statement-breakpoint
-- Webhook messages, partitioned with their events (`event_at`); the existing ones hold -infinity there (a
-- default kept in the catalogue: no row is rewritten). Their attempts lose the foreign key: the two are
-- partitioned apart, and attempts are kept less long.
ALTER TABLE "webhook_attempts" DROP CONSTRAINT "webhook_attempts_message_id_webhook_messages_id_fk";--> statement-breakpoint
ALTER TABLE "webhook_messages" RENAME TO "webhook_messages_legacy";--> statement-breakpoint
ALTER TABLE "webhook_messages_legacy" ADD COLUMN "event_at" timestamp with time zone DEFAULT '-infinity' NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_messages_legacy" RENAME CONSTRAINT "webhook_messages_endpoint_id_webhook_endpoints_id_fk" TO "webhook_messages_legacy_endpoint_id_fk";--> statement-breakpoint
ALTER INDEX "webhook_messages_endpoint_idx" RENAME TO "webhook_messages_legacy_endpoint_id_created_at_idx";--> statement-breakpoint
ALTER INDEX "webhook_messages_due_idx" RENAME TO "webhook_messages_legacy_next_attempt_at_idx";--> statement-breakpoint
ALTER INDEX "webhook_messages_pending_idx" RENAME TO "webhook_messages_legacy_endpoint_id_created_at_id_idx";--> statement-breakpoint
ALTER TABLE "webhook_messages_legacy" DROP CONSTRAINT "webhook_messages_pkey";--> statement-breakpoint
ALTER TABLE "webhook_messages_legacy" ADD CONSTRAINT "webhook_messages_legacy_pk" PRIMARY KEY ("id", "event_at");--> statement-breakpoint
CREATE INDEX "webhook_messages_legacy_event_id_idx" ON "webhook_messages_legacy" USING btree ("event_id");--> statement-breakpoint
DROP INDEX "webhook_messages_event_endpoint_uq";--> statement-breakpoint
CREATE TABLE "webhook_messages" (
	"id" text NOT NULL,
	"endpoint_id" text NOT NULL,
	"campaign_id" text NOT NULL,
	"event_id" text,
	"event_type" text NOT NULL,
	"test_body" jsonb,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"generation" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone NOT NULL,
	"last_status_code" integer,
	"last_error" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"succeeded_at" timestamp with time zone,
	"attempts_pruned" integer DEFAULT 0 NOT NULL,
	"event_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhook_messages_pk" PRIMARY KEY("id","event_at")
) PARTITION BY RANGE ("event_at");--> statement-breakpoint
ALTER TABLE "webhook_messages" ADD CONSTRAINT "webhook_messages_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_messages_event_idx" ON "webhook_messages" USING btree ("event_id");--> statement-breakpoint
CREATE INDEX "webhook_messages_endpoint_idx" ON "webhook_messages" USING btree ("endpoint_id","created_at");--> statement-breakpoint
CREATE INDEX "webhook_messages_due_idx" ON "webhook_messages" USING btree ("next_attempt_at") WHERE "webhook_messages"."status" = 'PENDING';--> statement-breakpoint
CREATE INDEX "webhook_messages_pending_idx" ON "webhook_messages" USING btree ("endpoint_id","created_at","id") WHERE "webhook_messages"."status" = 'PENDING';--> statement-breakpoint
SELECT pg_temp.stampcard_partition('webhook_messages', 'event_at', 'week', 2);--> statement-breakpoint
-- Attempts: one key for the order a message's log is read in, which was an index of its own beside the id's.
ALTER TABLE "webhook_attempts" RENAME TO "webhook_attempts_legacy";--> statement-breakpoint
ALTER TABLE "webhook_attempts_legacy" DROP CONSTRAINT "webhook_attempts_pkey";--> statement-breakpoint
ALTER TABLE "webhook_attempts_legacy" ADD CONSTRAINT "webhook_attempts_legacy_pk" PRIMARY KEY ("message_id", "attempted_at", "id");--> statement-breakpoint
DROP INDEX "webhook_attempts_message_idx";--> statement-breakpoint
DROP INDEX "webhook_attempts_attempted_idx";--> statement-breakpoint
CREATE INDEX "webhook_attempts_legacy_attempted_at_idx" ON "webhook_attempts_legacy" USING brin ("attempted_at");--> statement-breakpoint
CREATE TABLE "webhook_attempts" (
	"id" text NOT NULL,
	"message_id" text NOT NULL,
	"endpoint_id" text NOT NULL,
	"attempted_at" timestamp with time zone NOT NULL,
	"status_code" integer,
	"latency_ms" integer NOT NULL,
	"response_excerpt" text,
	"error_class" text,
	"succeeded" boolean NOT NULL,
	"throttled" boolean DEFAULT false NOT NULL,
	CONSTRAINT "webhook_attempts_pk" PRIMARY KEY("message_id","attempted_at","id")
) PARTITION BY RANGE ("attempted_at");--> statement-breakpoint
CREATE INDEX "webhook_attempts_attempted_brin" ON "webhook_attempts" USING brin ("attempted_at");--> statement-breakpoint
SELECT pg_temp.stampcard_partition('webhook_attempts', 'attempted_at', 'week', 2);--> statement-breakpoint
-- The audit log, by month; its time-ordered purge index goes with the batch purge.
ALTER TABLE "audit_log" RENAME TO "audit_log_legacy";--> statement-breakpoint
ALTER TABLE "audit_log_legacy" DROP CONSTRAINT "audit_log_pkey";--> statement-breakpoint
ALTER TABLE "audit_log_legacy" ADD CONSTRAINT "audit_log_legacy_pk" PRIMARY KEY ("id", "at");--> statement-breakpoint
DROP INDEX "audit_log_at_idx";--> statement-breakpoint
ALTER INDEX "audit_log_account_idx" RENAME TO "audit_log_legacy_account_id_id_idx";--> statement-breakpoint
ALTER INDEX "audit_log_entity_idx" RENAME TO "audit_log_legacy_entity_entity_id_id_idx";--> statement-breakpoint
CREATE TABLE "audit_log" (
	"id" bigint DEFAULT nextval('audit_log_id_seq'::regclass) NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"account_id" text,
	"campaign_id" text,
	"actor_kind" text NOT NULL,
	"actor_id" text,
	"actor_user_id" text,
	"request_id" text,
	"via" text,
	"entity" text NOT NULL,
	"entity_id" text NOT NULL,
	"action" text NOT NULL,
	"before" jsonb,
	"after" jsonb,
	CONSTRAINT "audit_log_pk" PRIMARY KEY("id","at")
) PARTITION BY RANGE ("at");--> statement-breakpoint
ALTER SEQUENCE "audit_log_id_seq" OWNED BY "audit_log"."id";--> statement-breakpoint
CREATE INDEX "audit_log_account_idx" ON "audit_log" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "audit_log_entity_idx" ON "audit_log" USING btree ("entity","entity_id","id");--> statement-breakpoint
SELECT pg_temp.stampcard_partition('audit_log', 'at', 'month', 2);--> statement-breakpoint
-- 3. A creation or deletion records what the row holds, not what it does not: no nulls, no counters (the
--    trigger's ignored columns, all zero when a row is made), no id or campaign (the entry's own columns). A
--    participant added by a loyalty action cost 1.2 KB of audit log; it now costs what its fields hold.
CREATE OR REPLACE FUNCTION stampcard_audit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  actor jsonb := current_setting('stampcard.actor', true)::jsonb;
  entity text := TG_ARGV[0];
  hidden text[] := TG_ARGV[1]::text[];
  ignored text[] := TG_ARGV[2]::text[];
  old_row jsonb;
  new_row jsonb;
  changed text[];
  before jsonb;
  after jsonb;
  one jsonb;
  account text;
BEGIN
  IF TG_OP <> 'INSERT' THEN old_row := to_jsonb(OLD) - hidden; END IF;
  IF TG_OP <> 'DELETE' THEN new_row := to_jsonb(NEW) - hidden; END IF;
  IF TG_OP = 'UPDATE' THEN
    SELECT array_agg(k) INTO changed FROM jsonb_object_keys(new_row) AS k
    WHERE new_row -> k IS DISTINCT FROM old_row -> k AND NOT (k = ANY (ignored));
    IF changed IS NULL THEN RETURN NULL; END IF;
    SELECT jsonb_object_agg(k, old_row -> k), jsonb_object_agg(k, new_row -> k) INTO before, after
    FROM unnest(changed) AS k;
  ELSE
    before := jsonb_strip_nulls(old_row - ignored - ARRAY['id', 'campaign_id']);
    after := jsonb_strip_nulls(new_row - ignored - ARRAY['id', 'campaign_id']);
  END IF;
  one := coalesce(new_row, old_row);
  account := CASE
    WHEN entity = 'account' THEN one ->> 'id'
    WHEN one ? 'account_id' THEN one ->> 'account_id'
    WHEN one ? 'campaign_id' THEN (SELECT c.account_id FROM campaigns c WHERE c.id = one ->> 'campaign_id')
    WHEN one ? 'user_id' THEN (SELECT u.account_id FROM users u WHERE u.id = one ->> 'user_id')
  END;
  INSERT INTO audit_log (at, account_id, campaign_id, actor_kind, actor_id, actor_user_id, request_id, via,
    entity, entity_id, action, before, after)
  VALUES (clock_timestamp(), coalesce(account, actor ->> 'accountId'),
    CASE WHEN entity = 'campaign' THEN one ->> 'id' ELSE one ->> 'campaign_id' END,
    actor ->> 'kind', actor ->> 'id', actor ->> 'userId', actor ->> 'requestId', actor ->> 'via',
    entity, one ->> 'id', CASE TG_OP WHEN 'INSERT' THEN 'CREATED' WHEN 'UPDATE' THEN 'UPDATED' ELSE 'DELETED' END,
    before, after);
  RETURN NULL;
END $$;
