-- Status pages, their components, domains and publishable keys; incidents and their updates;
-- postmortems; subscribers (see src/domain/status_pages/, incidents.rs, postmortems.rs and
-- src/public/). Timestamps are integer milliseconds; booleans 0/1; lists are JSON text.

CREATE TABLE status_pages (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    -- Unique across the server: the public address is /s/{slug}.
    slug TEXT NOT NULL UNIQUE,
    published INTEGER NOT NULL DEFAULT 0,
    -- The branding object as JSON (logoUrl, faviconUrl, colours, customCss, footerLinks,
    -- timezone, language).
    branding TEXT NOT NULL,
    -- Days of history on the public page (uptime bars, past incidents).
    history_days INTEGER NOT NULL,
    -- OFF, DRAFT or PUBLISHED: whether an alert on a component's monitor opens an incident.
    auto_incidents TEXT NOT NULL DEFAULT 'OFF',
    -- Private pages: an argon2 hash of the page password, and allowed email domains (JSON).
    password_hash TEXT,
    allowed_email_domains TEXT NOT NULL DEFAULT '[]',
    version INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX status_pages_workspace ON status_pages (workspace_id, id);

CREATE TABLE status_page_components (
    id TEXT PRIMARY KEY,
    status_page_id TEXT NOT NULL REFERENCES status_pages(id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    monitor_id TEXT REFERENCES monitors(id) ON DELETE SET NULL,
    name TEXT NOT NULL,
    description TEXT,
    group_name TEXT,
    position INTEGER NOT NULL
);
CREATE INDEX status_page_components_page ON status_page_components (status_page_id, position);
CREATE INDEX status_page_components_monitor ON status_page_components (monitor_id);

CREATE TABLE status_page_domains (
    -- Lowercase host name, unique across the server.
    domain TEXT PRIMARY KEY,
    status_page_id TEXT NOT NULL REFERENCES status_pages(id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    -- The value the TXT record must hold.
    verification_token TEXT NOT NULL,
    verified_at INTEGER,
    created_at INTEGER NOT NULL
);
CREATE INDEX status_page_domains_page ON status_page_domains (status_page_id);

CREATE TABLE publishable_keys (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    status_page_id TEXT NOT NULL REFERENCES status_pages(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    -- The first characters of the key, shown in lists.
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at INTEGER
);
CREATE INDEX publishable_keys_page ON publishable_keys (status_page_id);

CREATE TABLE incidents (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    status_page_id TEXT NOT NULL REFERENCES status_pages(id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    severity TEXT NOT NULL,
    visibility TEXT NOT NULL,
    affected_component_ids TEXT NOT NULL DEFAULT '[]',
    source_monitor_id TEXT,
    auto_generated INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    resolved_at INTEGER,
    published_at INTEGER,
    scheduled_for INTEGER,
    archived_at INTEGER
);
CREATE INDEX incidents_workspace ON incidents (workspace_id, created_at);
CREATE INDEX incidents_page ON incidents (status_page_id, created_at);
-- At most one unresolved auto-generated incident per page and monitor.
CREATE UNIQUE INDEX incidents_auto_open ON incidents (status_page_id, source_monitor_id)
    WHERE auto_generated = 1 AND resolved_at IS NULL;

CREATE TABLE incident_updates (
    id TEXT PRIMARY KEY,
    incident_id TEXT NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    message TEXT NOT NULL,
    status TEXT NOT NULL,
    system_generated INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER
);
CREATE INDEX incident_updates_incident ON incident_updates (incident_id, created_at);

CREATE TABLE postmortems (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    incident_id TEXT NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    -- Markdown; rendered and sanitised on output.
    body TEXT NOT NULL,
    published_at INTEGER,
    version INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX postmortems_workspace ON postmortems (workspace_id, created_at);
CREATE INDEX postmortems_incident ON postmortems (incident_id);

CREATE TABLE subscribers (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    status_page_id TEXT NOT NULL REFERENCES status_pages(id) ON DELETE CASCADE,
    -- Lowercased.
    email TEXT NOT NULL,
    -- Empty for the whole page, else the components chosen (JSON).
    component_ids TEXT NOT NULL DEFAULT '[]',
    verified_at INTEGER,
    unsubscribed_at INTEGER,
    created_at INTEGER NOT NULL,
    UNIQUE (status_page_id, email)
);
