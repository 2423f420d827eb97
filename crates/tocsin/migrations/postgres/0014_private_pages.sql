-- Private status pages: who may read a page's public answers. PUBLIC (anyone), PASSWORD (the
-- page password, its argon2 hash in password_hash) or EMAIL_DOMAINS (signed-in people whose
-- email domain is in allowed_email_domains, and members of the page's workspace).
ALTER TABLE status_pages ADD COLUMN visibility TEXT NOT NULL DEFAULT 'PUBLIC';
