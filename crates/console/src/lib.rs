//! The admin console's files and its run-time configuration, served from
//! the API itself (`GET /console/{proxy+}`, no authorizer: the page holds
//! no data; every call it makes carries the signed-in person's token).
//! Every answer carries a strict Content-Security-Policy and forbids
//! framing; hashed assets are cached for good, the page and its
//! configuration never.

use lambda_http::http::{header, StatusCode};
use lambda_http::{Body, Response};

mod assets {
    include!(concat!(env!("OUT_DIR"), "/assets.rs"));
}

/// Where the page sends people to sign in and which client it is, read
/// from the function's environment (the deployment's parameters), never
/// built into the page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The OpenID issuer (`CONSOLE_ISSUER`): discovery is at
    /// `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    /// The public client registered there for the console
    /// (`CONSOLE_CLIENT_ID`): authorization code with PKCE, no secret.
    pub client_id: String,
    /// The scopes asked for (`CONSOLE_SCOPE`, default `openid email`).
    pub scope: String,
    /// The `audience` parameter some providers need to issue an access
    /// token for the API (`CONSOLE_AUDIENCE`, Auth0's), if any.
    pub audience: Option<String>,
    /// Origins besides the issuer's that the page may call
    /// (`CONSOLE_AUTH_ORIGINS`, comma-separated): a provider whose token
    /// endpoint is on another host than its issuer (Cognito's domain).
    pub auth_origins: Vec<String>,
    /// The trusted issuers open to sign-up on first sign-in (from
    /// `TRUSTED_ISSUERS`, the authorizer's list): the page offers sign-up
    /// to a person the API does not know only there.
    pub sign_up_issuers: Vec<String>,
}

impl Config {
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        Self {
            issuer: get("CONSOLE_ISSUER").unwrap_or_default(),
            client_id: get("CONSOLE_CLIENT_ID").unwrap_or_default(),
            scope: get("CONSOLE_SCOPE").unwrap_or_else(|| "openid email".into()),
            audience: get("CONSOLE_AUDIENCE"),
            auth_origins: get("CONSOLE_AUTH_ORIGINS")
                .map(|v| {
                    v.split(',')
                        .map(|o| o.trim().to_string())
                        .filter(|o| !o.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            sign_up_issuers: get("TRUSTED_ISSUERS")
                .map(|list| sign_up_issuers(&list))
                .unwrap_or_default(),
        }
    }

    fn is_set(&self) -> bool {
        !self.issuer.is_empty() && !self.client_id.is_empty()
    }

    /// The page's policy: its own scripts and styles only, calls to the
    /// API (same origin) and the identity provider, never framed.
    pub fn content_security_policy(&self) -> String {
        let mut connect = vec!["'self'".to_string()];
        connect.extend(origin(&self.issuer));
        connect.extend(self.auth_origins.iter().filter_map(|o| origin(o)));
        let connect = connect.join(" ");
        format!(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src {connect}; base-uri 'none'; form-action 'none'; object-src 'none'; \
             frame-ancestors 'none'"
        )
    }
}

/// The issuers of a `TRUSTED_ISSUERS` list whose `signUp` is on (`open` or
/// `tenant`), read leniently: the authorizer checks the list; the page only
/// decides whether to offer sign-up.
fn sign_up_issuers(list: &str) -> Vec<String> {
    let Ok(serde_json::Value::Array(entries)) = serde_json::from_str(list) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|e| matches!(e["signUp"].as_str(), Some("open" | "tenant")))
        .filter_map(|e| e["issuer"].as_str().map(str::to_string))
        .collect()
}

/// `scheme://host[:port]` of an `https` URL (`http` only on loopback, for
/// the local stack), if its host is made of what a host may hold: nothing
/// that could end the policy's directive or widen it.
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest
        .split(['/', '?', '#'])
        .next()
        .filter(|h| !h.is_empty())?;
    let loopback = ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .any(|l| host == *l || host.strip_prefix(l).is_some_and(|p| p.starts_with(':')));
    let allowed = scheme == "https" || (scheme == "http" && loopback);
    let clean = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    (allowed && clean).then(|| format!("{scheme}://{host}"))
}

/// The answer for `file` under the console (`None`: the console's own
/// address), requested at `public_path` (the path the browser used, stage
/// included).
pub fn respond(file: Option<&str>, public_path: &str, config: &Config) -> Response<Body> {
    let (status, media, cache, body) = match file.filter(|f| !f.is_empty()) {
        // Its files are relative to the directory: the address ends in `/`.
        // `<...>/console` moves to `console/`, relative, so that nothing in
        // the request can point the browser at another host.
        None if !public_path.ends_with('/') => {
            return secured(
                Response::builder()
                    .status(StatusCode::MOVED_PERMANENTLY)
                    .header(header::LOCATION, "console/"),
                config,
            )
            .body(Body::Empty)
            .expect("a valid response");
        }
        None => asset("index.html").map_or_else(missing, |(media, text)| {
            (StatusCode::OK, media, "no-cache", Body::Text(text.into()))
        }),
        Some("config.json") => config_answer(config),
        Some(path) => match asset(path) {
            Some((media, text)) if path.starts_with("assets/") => (
                StatusCode::OK,
                media,
                "public, max-age=31536000, immutable",
                Body::Text(text.into()),
            ),
            Some((media, text)) => (StatusCode::OK, media, "no-cache", Body::Text(text.into())),
            None => missing(),
        },
    };
    secured(
        Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, media)
            .header(header::CACHE_CONTROL, cache),
        config,
    )
    .body(body)
    .expect("a valid response")
}

type Answer = (StatusCode, &'static str, &'static str, Body);

fn missing() -> Answer {
    (
        StatusCode::NOT_FOUND,
        "application/json",
        "no-cache",
        Body::Text(
            r#"{"error": {"code": "not_found", "message": "the console has no such file"}}"#.into(),
        ),
    )
}

fn config_answer(config: &Config) -> Answer {
    // Not a 5xx: anyone may ask, and the API's error alarm is for faults.
    let body = if config.is_set() {
        serde_json::json!({
            "configured": true,
            "issuer": config.issuer,
            "clientId": config.client_id,
            "scope": config.scope,
            "audience": config.audience,
            "signUpIssuers": config.sign_up_issuers,
        })
    } else {
        serde_json::json!({
            "configured": false,
            "message": "the console is not configured: the deployment sets ConsoleIssuer and ConsoleClientId (docs/console.md)",
        })
    };
    (
        StatusCode::OK,
        "application/json",
        "no-store",
        Body::Text(body.to_string()),
    )
}

fn asset(path: &str) -> Option<(&'static str, &'static str)> {
    assets::ASSETS
        .iter()
        .find(|(name, _, _)| *name == path)
        .map(|(_, media, text)| (*media, *text))
}

fn secured(
    builder: lambda_http::http::response::Builder,
    config: &Config,
) -> lambda_http::http::response::Builder {
    builder
        .header("content-security-policy", config.content_security_policy())
        .header("x-frame-options", "DENY")
        .header("x-content-type-options", "nosniff")
        .header("referrer-policy", "no-referrer")
        .header("cross-origin-opener-policy", "same-origin")
        .header("strict-transport-security", "max-age=31536000")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::from_lookup(|name| {
            match name {
            "CONSOLE_ISSUER" => Some("https://id.example.com/tenant-a/".into()),
            "CONSOLE_CLIENT_ID" => Some("console".into()),
            "CONSOLE_AUTH_ORIGINS" => Some(
                "https://auth.example.com, ftp://x, https://a.example;script-src *, http://plain.example, https://*"
                    .into(),
            ),
            "TRUSTED_ISSUERS" => Some(
                r#"[{"issuer": "https://id.example.com/tenant-a/", "audiences": ["a"], "signUp": "open"},
                    {"issuer": "https://closed.example.com", "audiences": ["a"]},
                    {"issuer": "https://acme.example.com", "audiences": ["a"], "signUp": "tenant"}]"#
                    .into(),
            ),
            _ => None,
        }
        })
    }

    fn header<'a>(response: &'a Response<Body>, name: &str) -> &'a str {
        response.headers()[name].to_str().unwrap()
    }

    fn text(response: &Response<Body>) -> &str {
        match response.body() {
            Body::Text(t) => t,
            other => panic!("not text: {other:?}"),
        }
    }

    #[test]
    fn the_page_is_served_at_its_directory_with_a_strict_policy() {
        let page = respond(None, "/prod/console/", &config());
        assert_eq!(page.status(), 200);
        assert_eq!(header(&page, "content-type"), "text/html; charset=utf-8");
        if assets::BUILT {
            assert!(text(&page).contains("<script type=\"module\""));
        } else {
            // Compiled before `make console`: the page says how to build it.
            assert!(text(&page).contains("make console"), "{}", text(&page));
        }
        let csp = header(&page, "content-security-policy");
        assert!(csp.contains("default-src 'none'"), "{csp}");
        assert!(csp.contains("script-src 'self';"), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(
            csp.contains("connect-src 'self' https://id.example.com https://auth.example.com;"),
            "{csp}"
        );
        assert!(!csp.contains("unsafe"), "{csp}");
        assert_eq!(header(&page, "x-frame-options"), "DENY");
        assert_eq!(header(&page, "cache-control"), "no-cache");
    }

    #[test]
    fn the_address_without_its_slash_moves_to_it() {
        let moved = respond(None, "/prod/console", &config());
        assert_eq!(moved.status(), 301);
        assert_eq!(header(&moved, "location"), "console/");
        assert_eq!(header(&moved, "x-frame-options"), "DENY");
    }

    #[test]
    fn hashed_assets_are_cached_for_good_and_unknown_files_are_404() {
        let script = assets::ASSETS
            .iter()
            .find(|(name, _, _)| name.starts_with("assets/") && name.ends_with(".js"));
        match script {
            Some(script) => {
                let answer = respond(Some(script.0), "/prod/console/x", &config());
                assert_eq!(answer.status(), 200);
                assert_eq!(
                    header(&answer, "content-type"),
                    "text/javascript; charset=utf-8"
                );
                assert!(header(&answer, "cache-control").contains("immutable"));
            }
            // Compiled before `make console`: the placeholder page alone.
            None => assert!(!assets::BUILT && assets::ASSETS.len() == 1),
        }
        let missing = respond(Some("assets/nothing.js"), "/prod/console/x", &config());
        assert_eq!(missing.status(), 404);
        assert!(header(&missing, "content-security-policy").contains("frame-ancestors"));
    }

    #[test]
    fn the_configuration_comes_from_the_environment() {
        let answer = respond(Some("config.json"), "/prod/console/config.json", &config());
        assert_eq!(answer.status(), 200);
        assert_eq!(header(&answer, "cache-control"), "no-store");
        let body: serde_json::Value = serde_json::from_str(text(&answer)).unwrap();
        assert_eq!(body["configured"], true);
        assert_eq!(body["issuer"], "https://id.example.com/tenant-a/");
        assert_eq!(body["clientId"], "console");
        assert_eq!(body["scope"], "openid email");
        assert!(body["audience"].is_null());
        // Where the page may offer sign-up to a person the API does not
        // know: the issuers open to it.
        assert_eq!(
            body["signUpIssuers"],
            serde_json::json!([
                "https://id.example.com/tenant-a/",
                "https://acme.example.com"
            ])
        );
    }

    #[test]
    fn an_unconfigured_console_says_what_to_set() {
        let answer = respond(
            Some("config.json"),
            "/prod/console/config.json",
            &Config::default(),
        );
        assert_eq!(answer.status(), 200, "not a fault of the API's");
        let body: serde_json::Value = serde_json::from_str(text(&answer)).unwrap();
        assert_eq!(body["configured"], false);
        assert!(body["message"]
            .as_str()
            .unwrap()
            .contains("ConsoleIssuer and ConsoleClientId"));
    }

    #[test]
    fn only_clean_https_origins_reach_the_policy() {
        assert_eq!(
            origin("https://a.example:8443/x?y"),
            Some("https://a.example:8443".into())
        );
        assert_eq!(
            origin("http://127.0.0.1:3001"),
            Some("http://127.0.0.1:3001".into())
        );
        for refused in [
            "http://a.example",
            "http://127.0.0.1.evil.example",
            "https://a.example;script-src *",
            "https://*",
            "ftp://a",
            "https://",
            "a.example",
        ] {
            assert_eq!(origin(refused), None, "{refused}");
        }
    }
}
