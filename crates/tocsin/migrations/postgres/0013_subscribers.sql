-- Status page subscribers' email goes through the same outbox as channel notifications (see
-- src/alerting/subscriber_mail.rs): a delivery is addressed to a notification channel or to a
-- subscriber, exactly one of the two.

ALTER TABLE deliveries ALTER COLUMN channel_id DROP NOT NULL;
-- The subscriber an email goes to (a status page's subscriber); deleting the subscriber
-- deletes its history with it.
ALTER TABLE deliveries ADD COLUMN subscriber_id TEXT REFERENCES subscribers(id) ON DELETE CASCADE;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_one_target
    CHECK ((channel_id IS NULL) <> (subscriber_id IS NULL));
CREATE INDEX deliveries_subscriber ON deliveries (subscriber_id, id);

-- The admin list pages through a page's subscribers by id.
CREATE INDEX subscribers_page ON subscribers (status_page_id, id);
