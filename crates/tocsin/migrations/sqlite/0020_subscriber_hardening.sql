-- A subscriber of a page that turned private is suspended (src/domain/status_pages/subscribers.rs):
-- it is sent nothing until an admin re-admits it, since the page's readers changed.
ALTER TABLE subscribers ADD COLUMN suspended_at INTEGER;

-- The confirmation emails sent per mailbox (the address normalised: lowercased, without a
-- plus-tag or quotes), counted for the daily cap across pages and nodes.
CREATE TABLE subscriber_confirmations (
    mailbox TEXT NOT NULL,
    sent_at INTEGER NOT NULL
);
CREATE INDEX subscriber_confirmations_mailbox ON subscriber_confirmations (mailbox, sent_at);
CREATE INDEX subscriber_confirmations_sent ON subscriber_confirmations (sent_at);
