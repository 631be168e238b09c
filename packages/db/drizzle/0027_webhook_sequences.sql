-- Per (endpoint, participant) sequence numbers of webhook messages (the `webhook-sequence` header): the counter
-- table, the messages' columns (null for the messages made before: they carry no number), and the index the
-- fan-out reads to keep a participant's events in order (only events not fanned out yet are in it; building it
-- reads every partition of events once).
CREATE TABLE "webhook_sequences" (
	"endpoint_id" text NOT NULL,
	"participant_id" text NOT NULL,
	"last" bigint NOT NULL,
	CONSTRAINT "webhook_sequences_pk" PRIMARY KEY("endpoint_id","participant_id")
);
--> statement-breakpoint
ALTER TABLE "webhook_messages" ADD COLUMN "participant_id" text;--> statement-breakpoint
ALTER TABLE "webhook_messages" ADD COLUMN "sequence" bigint;--> statement-breakpoint
ALTER TABLE "webhook_sequences" ADD CONSTRAINT "webhook_sequences_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "events_undispatched_participant_idx" ON "events" USING btree (("data" #>> '{participant,id}'),"seq") WHERE "events"."dispatched_at" is null and ("events"."data" #>> '{participant,id}') is not null;