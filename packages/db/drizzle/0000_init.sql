CREATE TABLE "accounts" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"plan" text NOT NULL,
	"participant_quota" integer,
	"participant_count" integer DEFAULT 0 NOT NULL,
	"rate_limits" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"key_hash" text NOT NULL,
	"key_prefix" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"email" text NOT NULL,
	"role" text NOT NULL,
	"campaign_ids" text[] DEFAULT '{}'::text[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "events" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"campaign_id" text NOT NULL,
	"type" text NOT NULL,
	"data" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"dispatched_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "form_submissions" (
	"id" text PRIMARY KEY NOT NULL,
	"campaign_id" text NOT NULL,
	"participant_id" text NOT NULL,
	"reward_id" text NOT NULL,
	"status" text NOT NULL,
	"form_data" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"reviewed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "loyalty_actions" (
	"id" text PRIMARY KEY NOT NULL,
	"campaign_id" text NOT NULL,
	"participant_id" text NOT NULL,
	"reward_id" text NOT NULL,
	"status" text NOT NULL,
	"metadata" jsonb,
	"request_hash" text,
	"unlocked_reward_ids" text[] DEFAULT '{}'::text[] NOT NULL,
	"reason" text,
	"created_at" timestamp with time zone NOT NULL,
	"applied_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "participant_rewards" (
	"id" text PRIMARY KEY NOT NULL,
	"campaign_id" text NOT NULL,
	"participant_id" text NOT NULL,
	"reward_id" text NOT NULL,
	"action_id" text,
	"status" text DEFAULT 'PENDING' NOT NULL,
	"approved" boolean DEFAULT false NOT NULL,
	"approved_at" timestamp with time zone,
	"is_fulfilled" boolean DEFAULT false NOT NULL,
	"fulfilled_at" timestamp with time zone,
	"unread" boolean DEFAULT true NOT NULL,
	"earned_month" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "campaigns" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"status" text NOT NULL,
	"currency_iso" text NOT NULL,
	"require_reward_approval" boolean DEFAULT false NOT NULL,
	"anti_fraud" jsonb,
	"points_conversion" jsonb,
	"loyalty_action_count" integer DEFAULT 0 NOT NULL,
	"participant_count" integer DEFAULT 0 NOT NULL,
	"winner_count" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rewards" (
	"id" text PRIMARY KEY NOT NULL,
	"campaign_id" text NOT NULL,
	"title" text,
	"description" text,
	"subdescription" text,
	"instructions" text,
	"cta" text,
	"submission_type" text,
	"submission_example_url" text,
	"submission_form_url" text,
	"submission_form_fields" jsonb,
	"submission_form_button_text" text,
	"submission_form_messages" jsonb,
	"is_unlimited" boolean DEFAULT false NOT NULL,
	"limit" integer DEFAULT 1 NOT NULL,
	"conversions_required" integer DEFAULT 1 NOT NULL,
	"limit_duration" text DEFAULT 'IN_TOTAL' NOT NULL,
	"number_of_winners" integer,
	"coupon_code" text,
	"image_url" text,
	"order" integer,
	"metadata" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "participants" (
	"id" text PRIMARY KEY NOT NULL,
	"campaign_id" text NOT NULL,
	"email" text NOT NULL,
	"first_name" text,
	"last_name" text,
	"ip_address" text,
	"fingerprint" text,
	"loyalty_action_count" integer DEFAULT 0 NOT NULL,
	"counts_month" text NOT NULL,
	"monthly_loyalty_action_count" integer DEFAULT 0 NOT NULL,
	"prev_monthly_loyalty_action_count" integer DEFAULT 0 NOT NULL,
	"loyalty_action_counts_per_reward" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"monthly_loyalty_action_counts_per_reward" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"approved_reward_count" integer DEFAULT 0 NOT NULL,
	"fraud_risk_level" text DEFAULT 'LOW' NOT NULL,
	"fraud_reason_code" text DEFAULT 'UNIQUE_IDENTITY' NOT NULL,
	"loyalty_action_source" text NOT NULL,
	"notes" text,
	"metadata" jsonb,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "form_submissions" ADD CONSTRAINT "form_submissions_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "form_submissions" ADD CONSTRAINT "form_submissions_participant_id_participants_id_fk" FOREIGN KEY ("participant_id") REFERENCES "public"."participants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "form_submissions" ADD CONSTRAINT "form_submissions_reward_id_rewards_id_fk" FOREIGN KEY ("reward_id") REFERENCES "public"."rewards"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "loyalty_actions" ADD CONSTRAINT "loyalty_actions_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "participant_rewards" ADD CONSTRAINT "participant_rewards_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "participant_rewards" ADD CONSTRAINT "participant_rewards_participant_id_participants_id_fk" FOREIGN KEY ("participant_id") REFERENCES "public"."participants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "participant_rewards" ADD CONSTRAINT "participant_rewards_reward_id_rewards_id_fk" FOREIGN KEY ("reward_id") REFERENCES "public"."rewards"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "rewards" ADD CONSTRAINT "rewards_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "participants" ADD CONSTRAINT "participants_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_hash_uq" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "api_keys_user_idx" ON "api_keys" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "users_account_email_uq" ON "users" USING btree ("account_id","email");--> statement-breakpoint
CREATE UNIQUE INDEX "events_id_uq" ON "events" USING btree ("id");--> statement-breakpoint
CREATE INDEX "events_campaign_seq_idx" ON "events" USING btree ("campaign_id","seq");--> statement-breakpoint
CREATE INDEX "events_undispatched_idx" ON "events" USING btree ("seq") WHERE "events"."dispatched_at" is null;--> statement-breakpoint
CREATE INDEX "form_submissions_campaign_idx" ON "form_submissions" USING btree ("campaign_id","status");--> statement-breakpoint
CREATE UNIQUE INDEX "loyalty_actions_inflight_uq" ON "loyalty_actions" USING btree ("request_hash") WHERE "loyalty_actions"."status" = 'QUEUED' and "loyalty_actions"."request_hash" is not null;--> statement-breakpoint
CREATE INDEX "loyalty_actions_queued_idx" ON "loyalty_actions" USING btree ("created_at") WHERE "loyalty_actions"."status" = 'QUEUED';--> statement-breakpoint
CREATE INDEX "participant_rewards_participant_idx" ON "participant_rewards" USING btree ("participant_id","reward_id","earned_month");--> statement-breakpoint
CREATE INDEX "participant_rewards_reward_month_idx" ON "participant_rewards" USING btree ("reward_id","earned_month");--> statement-breakpoint
CREATE INDEX "campaigns_account_idx" ON "campaigns" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "rewards_campaign_idx" ON "rewards" USING btree ("campaign_id");--> statement-breakpoint
CREATE UNIQUE INDEX "participants_campaign_email_uq" ON "participants" USING btree ("campaign_id","email");--> statement-breakpoint
CREATE INDEX "participants_campaign_rank_idx" ON "participants" USING btree ("campaign_id","loyalty_action_count","created_at");