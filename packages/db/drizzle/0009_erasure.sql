ALTER TABLE "idempotency_keys" ADD COLUMN "subjects" text[];--> statement-breakpoint
CREATE INDEX "events_participant_idx" ON "events" USING btree (("data" #>> '{participant,id}'),"seq") WHERE ("events"."data" #>> '{participant,id}') is not null;--> statement-breakpoint
CREATE INDEX "idempotency_keys_subjects_idx" ON "idempotency_keys" USING gin ("subjects") WHERE "idempotency_keys"."subjects" is not null;--> statement-breakpoint
-- WEBHOOK_ENDPOINT_DISABLED events written before this carry the endpoint's whole URL (its path, query and
-- user:pass@ may hold the receiver's credentials): keep its id and its host only, as new ones are written.
UPDATE "events" SET "data" = jsonb_set("data", '{endpoint}', jsonb_build_object(
  'id', "data" #>> '{endpoint,id}',
  'host', lower(coalesce(substring("data" #>> '{endpoint,url}' from '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^/?#]*)'), ''))
))
WHERE "type" = 'WEBHOOK_ENDPOINT_DISABLED' AND "data" -> 'endpoint' ? 'url';
