//! Where a `next` (return-to) address may send a person: only to a page of this server. The
//! address is judged as a browser will read it, not by its first characters: browsers drop
//! tabs and newlines inside a URL and read `\` as `/`, so `/\t/evil.example`,
//! `/\n/evil.example` and `/\evil.example` all mean `//evil.example`, another origin. The
//! dashboard applies the same rule to `?next=` (`web/src/next.ts`); every `next` the server
//! builds or reads goes through [`local_path`].

use url::Url;

/// The path (with query and fragment) `next` leads to on `origin`'s server, or `None` when it
/// would leave that origin. Refused outright: anything not starting with `/`, and any control
/// character or backslash (what browsers rewrite before resolving).
pub fn local_path(next: &str, origin: &Url) -> Option<String> {
    if !next.starts_with('/') || next.chars().any(|c| c.is_control() || c == '\\') {
        return None;
    }
    // The url crate implements the WHATWG URL standard, the browsers' own parser.
    let url = origin.join(next).ok()?;
    if url.origin() != origin.origin() {
        return None;
    }
    let mut out = url.path().to_string();
    if let Some(q) = url.query() {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = url.fragment() {
        out.push('#');
        out.push_str(f);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Url {
        Url::parse("http://127.0.0.1:8080/").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn hostile_next_values_never_leave_the_origin() {
        for hostile in [
            "/\t/evil.example:9/x",
            "/\n/evil.example:9/x",
            "/\r/evil.example/x",
            "/\\evil.example/x",
            "/\\/evil.example/x",
            "//evil.example/x",
            "///evil.example/x",
            "https://evil.example/x",
            "javascript:alert(1)",
            "evil.example",
            "",
            "/\u{0}/evil.example",
            "/\u{7f}/evil.example",
            "/\u{85}/evil.example",
        ] {
            assert_eq!(local_path(hostile, &origin()), None, "{hostile:?}");
        }
    }

    #[test]
    fn paths_of_this_server_are_kept() {
        assert_eq!(
            local_path("/auth/oauth2/authorize?client_id=a&scope=b", &origin()).as_deref(),
            Some("/auth/oauth2/authorize?client_id=a&scope=b")
        );
        assert_eq!(
            local_path("/app/monitors/1#top", &origin()).as_deref(),
            Some("/app/monitors/1#top")
        );
        assert_eq!(
            local_path("/s/../app/x", &origin()).as_deref(),
            Some("/app/x")
        );
        // A space is no control character: it stays in the path, percent-encoded.
        assert_eq!(
            local_path("/ /evil.example", &origin()).as_deref(),
            Some("/%20/evil.example")
        );
    }
}
