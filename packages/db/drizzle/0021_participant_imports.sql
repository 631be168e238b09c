CREATE TABLE "participant_import_chunks" (
	"import_id" text NOT NULL,
	"seq" integer NOT NULL,
	"data" "bytea" NOT NULL,
	CONSTRAINT "participant_import_chunks_import_id_seq_pk" PRIMARY KEY("import_id","seq")
);
--> statement-breakpoint
CREATE TABLE "participant_import_emails" (
	"import_id" text NOT NULL,
	"email" text NOT NULL,
	"row" integer NOT NULL,
	CONSTRAINT "participant_import_emails_import_id_email_pk" PRIMARY KEY("import_id","email")
);
--> statement-breakpoint
CREATE TABLE "participant_import_refusals" (
	"import_id" text NOT NULL,
	"row" integer NOT NULL,
	"reason" text NOT NULL,
	"message" text NOT NULL,
	"cells" jsonb NOT NULL,
	CONSTRAINT "participant_import_refusals_import_id_row_pk" PRIMARY KEY("import_id","row")
);
--> statement-breakpoint
CREATE TABLE "participant_imports" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"campaign_id" text NOT NULL,
	"status" text NOT NULL,
	"mode" text NOT NULL,
	"silent" boolean NOT NULL,
	"format" text NOT NULL,
	"actor_kind" text NOT NULL,
	"actor_id" text,
	"idempotency_key" text,
	"content_sha256" text NOT NULL,
	"columns" jsonb NOT NULL,
	"size_bytes" bigint NOT NULL,
	"byte_offset" bigint NOT NULL,
	"batches" integer DEFAULT 0 NOT NULL,
	"rows_total" integer,
	"rows_done" integer DEFAULT 0 NOT NULL,
	"created_count" integer DEFAULT 0 NOT NULL,
	"updated_count" integer DEFAULT 0 NOT NULL,
	"unchanged_count" integer DEFAULT 0 NOT NULL,
	"refused_count" integer DEFAULT 0 NOT NULL,
	"action_count" integer DEFAULT 0 NOT NULL,
	"error" text,
	"created_at" timestamp with time zone NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"touched_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "loyalty_actions" ADD COLUMN "import_id" text;--> statement-breakpoint
ALTER TABLE "loyalty_actions" ADD COLUMN "silent" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "participant_import_chunks" ADD CONSTRAINT "participant_import_chunks_import_id_participant_imports_id_fk" FOREIGN KEY ("import_id") REFERENCES "public"."participant_imports"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "participant_import_emails" ADD CONSTRAINT "participant_import_emails_import_id_participant_imports_id_fk" FOREIGN KEY ("import_id") REFERENCES "public"."participant_imports"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "participant_import_refusals" ADD CONSTRAINT "participant_import_refusals_import_id_participant_imports_id_fk" FOREIGN KEY ("import_id") REFERENCES "public"."participant_imports"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "participant_imports" ADD CONSTRAINT "participant_imports_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "participant_imports" ADD CONSTRAINT "participant_imports_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "participant_imports_idempotency_uq" ON "participant_imports" USING btree ("campaign_id","idempotency_key") WHERE "participant_imports"."idempotency_key" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "participant_imports_content_uq" ON "participant_imports" USING btree ("campaign_id","content_sha256","mode","silent") WHERE "participant_imports"."status" <> 'FAILED';--> statement-breakpoint
CREATE INDEX "participant_imports_campaign_idx" ON "participant_imports" USING btree ("campaign_id","created_at");--> statement-breakpoint
CREATE INDEX "participant_imports_open_idx" ON "participant_imports" USING btree ("touched_at") WHERE "participant_imports"."status" in ('QUEUED', 'RUNNING');