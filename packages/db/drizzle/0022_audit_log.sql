CREATE TABLE "audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
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
	"after" jsonb
);
--> statement-breakpoint
CREATE INDEX "audit_log_account_idx" ON "audit_log" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "audit_log_entity_idx" ON "audit_log" USING btree ("entity","entity_id","id");--> statement-breakpoint
CREATE INDEX "audit_log_at_idx" ON "audit_log" USING btree ("at");--> statement-breakpoint
-- The audit log's writer: one trigger per audited table. Arguments: the entity's name, the columns never
-- recorded (secrets, derived keys, personal answers), and the columns whose change alone is not a change
-- (counters the worker keeps, bookkeeping). It records only what a transaction naming its actor changed
-- (`stampcard.actor`, set by core's `unitOfWork`): the triggers' WHEN clause skips everything else unread.
CREATE FUNCTION stampcard_audit() RETURNS trigger LANGUAGE plpgsql AS $$
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
    before := old_row;
    after := new_row;
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
--> statement-breakpoint
CREATE TRIGGER audit_accounts AFTER INSERT OR UPDATE OR DELETE ON accounts FOR EACH ROW
  WHEN (coalesce(current_setting('stampcard.actor', true), '') <> '')
  EXECUTE FUNCTION stampcard_audit('account', '{}', '{participant_count}');
--> statement-breakpoint
CREATE TRIGGER audit_users AFTER INSERT OR UPDATE OR DELETE ON users FOR EACH ROW
  WHEN (coalesce(current_setting('stampcard.actor', true), '') <> '')
  EXECUTE FUNCTION stampcard_audit('user', '{}', '{}');
--> statement-breakpoint
CREATE TRIGGER audit_api_keys AFTER INSERT OR UPDATE OR DELETE ON api_keys FOR EACH ROW
  WHEN (coalesce(current_setting('stampcard.actor', true), '') <> '')
  EXECUTE FUNCTION stampcard_audit('api_key', '{key_hash}', '{}');
--> statement-breakpoint
CREATE TRIGGER audit_campaigns AFTER INSERT OR UPDATE OR DELETE ON campaigns FOR EACH ROW
  WHEN (coalesce(current_setting('stampcard.actor', true), '') <> '')
  EXECUTE FUNCTION stampcard_audit('campaign', '{}', '{loyalty_action_count,participant_count,winner_count,updated_at}');
--> statement-breakpoint
CREATE TRIGGER audit_rewards AFTER INSERT OR UPDATE OR DELETE ON rewards FOR EACH ROW
  WHEN (coalesce(current_setting('stampcard.actor', true), '') <> '')
  EXECUTE FUNCTION stampcard_audit('reward', '{}', '{}');
--> statement-breakpoint
CREATE TRIGGER audit_participants AFTER INSERT OR UPDATE OR DELETE ON participants FOR EACH ROW
  WHEN (coalesce(current_setting('stampcard.actor', true), '') <> '')
  EXECUTE FUNCTION stampcard_audit('participant', '{email_key}', '{updated_at,loyalty_action_count,counts_month,monthly_loyalty_action_count,prev_monthly_loyalty_action_count,loyalty_action_counts_per_reward,monthly_loyalty_action_counts_per_reward,approved_reward_count,reward_count}');
--> statement-breakpoint
CREATE TRIGGER audit_participant_rewards AFTER INSERT OR UPDATE OR DELETE ON participant_rewards FOR EACH ROW
  WHEN (coalesce(current_setting('stampcard.actor', true), '') <> '')
  EXECUTE FUNCTION stampcard_audit('participant_reward', '{}', '{unread}');
--> statement-breakpoint
CREATE TRIGGER audit_form_submissions AFTER INSERT OR UPDATE OR DELETE ON form_submissions FOR EACH ROW
  WHEN (coalesce(current_setting('stampcard.actor', true), '') <> '')
  EXECUTE FUNCTION stampcard_audit('form_submission', '{form_data}', '{}');
--> statement-breakpoint
CREATE TRIGGER audit_webhook_endpoints AFTER INSERT OR UPDATE OR DELETE ON webhook_endpoints FOR EACH ROW
  WHEN (coalesce(current_setting('stampcard.actor', true), '') <> '')
  EXECUTE FUNCTION stampcard_audit('webhook_endpoint', '{secret,previous_secret}', '{updated_at,failing_since,throttles,throttled_since,backlog_state,backlog_total,backlog_done,backlog_batches,backlog_started_at,backlog_finished_at,backlog_touched_at,backlog_cursor_at,backlog_cursor_id}');
--> statement-breakpoint
CREATE TRIGGER audit_participant_imports AFTER INSERT ON participant_imports FOR EACH ROW
  WHEN (coalesce(current_setting('stampcard.actor', true), '') <> '')
  EXECUTE FUNCTION stampcard_audit('participant_import', '{}', '{}');
