CREATE TABLE "erasures" (
	"participant_id" text PRIMARY KEY NOT NULL,
	"campaign_id" text NOT NULL,
	"state" text NOT NULL,
	"phase" text NOT NULL,
	"cursor_seq" bigint,
	"batches" integer DEFAULT 0 NOT NULL,
	"erased_events" integer DEFAULT 0 NOT NULL,
	"erased_answers" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"touched_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "erasures" ADD CONSTRAINT "erasures_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "erasures_running_idx" ON "erasures" USING btree ("touched_at") WHERE "erasures"."state" = 'RUNNING';