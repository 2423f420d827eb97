-- Email verification of password accounts (src/domain/email_verification.rs). A user's address
-- counts as theirs once `email_verified_at` is set: by following an emailed link, or at once
-- for users the operator makes with `tocsin user create`. Users who existed before this
-- migration start unverified (NULL): they verify from the dashboard's resend, or the operator
-- runs `tocsin user verify`.
ALTER TABLE users ADD COLUMN email_verified_at BIGINT;

-- The emailed links: a random token whose SHA-256 is stored, for one address of one user,
-- valid 24 hours and once. `resend` marks links asked for again (limited per hour).
CREATE TABLE email_verifications (
    token_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    resend BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX email_verifications_user ON email_verifications (user_id, created_at);
