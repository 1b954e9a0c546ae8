//! The local OpenID provider (npm `oidc-provider`, run by `oidc/provider.mjs`)
//! and scripted sign-ins against it, with no person: the authorization code
//! flow with PKCE through its development login page (any login name signs
//! in; the subject is the name), and client credentials. What `make token`,
//! `make demo` and the end-to-end tests use; a console signs in through the
//! same provider in a browser.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aws_lc_rs::digest::{digest, SHA256};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

/// The public client scripted sign-ins (and a console) use: PKCE, no secret.
pub const CLIENT: &str = "authz-console";
/// The client of a backend service: client credentials (a machine).
pub const SERVICE_CLIENT: &str = "authz-service";
pub const SERVICE_SECRET: &str = "local-service-secret";
/// The resource indicator access tokens are for: their `aud`.
pub const RESOURCE: &str = "urn:authz:local";

/// The provider's script in the repository at `root` (its `node_modules`
/// holds `oidc-provider`).
pub fn script(root: &Path) -> PathBuf {
    root.join("crates/devtools/oidc/provider.mjs")
}

/// A running provider: its process group and its issuer URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    pub pgid: u32,
    pub issuer: String,
}

/// Starts the provider on `port` with `node`, its output in `log`, and
/// waits until its discovery document answers (or it exits). `redirects`
/// are the console's addresses: where its sign-in and sign-out return,
/// besides the scripted sign-ins' [`callback`].
pub async fn start(
    root: &Path,
    port: u16,
    redirects: &[String],
    log: &Path,
) -> Result<Provider, String> {
    let script = script(root);
    if !root.join("node_modules/oidc-provider").exists() {
        return Err("node_modules/oidc-provider is missing: `make deps` installs it".into());
    }
    let mut command = std::process::Command::new("node");
    command
        .arg(&script)
        .arg(port.to_string())
        .args(redirects)
        .current_dir(root);
    let pgid = testkit::process::spawn(command, Some(log))
        .map_err(|e| format!("start node {}: {e}", script.display()))?;
    let issuer = format!("http://127.0.0.1:{port}");
    let discovery = format!("{issuer}/.well-known/openid-configuration");
    for _ in 0..300 {
        if let Ok(page) = Browser::new().send("GET", &discovery, None, None).await {
            if page.status == 200 {
                return Ok(Provider { pgid, issuer });
            }
        }
        if !testkit::process::alive(pgid) {
            return Err(format!(
                "the OpenID provider exited (see {}): is port {port} free?",
                log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    testkit::process::stop_group(pgid, Duration::from_secs(5));
    Err(format!(
        "the OpenID provider did not answer on {issuer} within 30 s"
    ))
}

/// The `TRUSTED_ISSUERS` entry that trusts the local provider: access
/// tokens for [`RESOURCE`], users by identity, open to sign-up; its keys
/// found through its discovery document, as for any OpenID provider.
pub fn trusted_issuer(issuer: &str) -> Value {
    serde_json::json!([{
        "issuer": issuer,
        "audiences": [RESOURCE],
        "tokenUse": "access",
        "algorithms": ["ES256"],
        "signUp": "open",
    }])
}

/// The redirect URI scripted sign-ins use (never followed: the code is
/// read from it).
pub fn callback(issuer: &str) -> String {
    format!("{issuer}/callback")
}

/// A cookie jar and a client that follows nothing on its own.
struct Browser {
    client: Client<HttpConnector, Full<Bytes>>,
    cookies: HashMap<String, String>,
}

/// An answer: status, `Location`, body.
struct Page {
    status: u16,
    location: Option<String>,
    body: String,
}

impl Browser {
    fn new() -> Self {
        Self {
            client: Client::builder(TokioExecutor::new()).build_http(),
            cookies: HashMap::new(),
        }
    }

    async fn send(
        &mut self,
        method: &str,
        url: &str,
        form: Option<&[(&str, &str)]>,
        basic: Option<(&str, &str)>,
    ) -> Result<Page, String> {
        let mut request = hyper::Request::builder().method(method).uri(url);
        if !self.cookies.is_empty() {
            let jar: Vec<String> = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            request = request.header("cookie", jar.join("; "));
        }
        if let Some((user, secret)) = basic {
            let credentials =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{secret}"));
            request = request.header("authorization", format!("Basic {credentials}"));
        }
        let body = match form {
            Some(pairs) => {
                request = request.header("content-type", "application/x-www-form-urlencoded");
                form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(pairs)
                    .finish()
            }
            None => String::new(),
        };
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(Duration::from_secs(10), self.client.request(request))
            .await
            .map_err(|_| format!("{method} {url}: no answer within 10 s"))?
            .map_err(|e| format!("{method} {url}: {e}"))?;
        for cookie in response.headers().get_all("set-cookie") {
            let Ok(text) = cookie.to_str() else { continue };
            let pair = text.split(';').next().unwrap_or_default();
            if let Some((name, value)) = pair.split_once('=') {
                self.cookies
                    .insert(name.trim().to_string(), value.trim().to_string());
            }
        }
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .map(str::to_string);
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok(Page {
            status,
            location,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }
}

/// `location` made absolute against the issuer.
fn absolute(issuer: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        location.to_string()
    } else {
        format!("{issuer}{location}")
    }
}

fn random_url_safe(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    SystemRandom::new()
        .fill(&mut buf)
        .expect("the system's random source");
    URL_SAFE_NO_PAD.encode(buf)
}

/// Signs in as `login` with the authorization code flow and PKCE, posting
/// the provider's login form (and its consent form, when it asks), and
/// answers the access token: a JWT for [`RESOURCE`] whose `sub` is `login`.
pub async fn sign_in(issuer: &str, login: &str) -> Result<String, String> {
    let verifier = random_url_safe(32);
    let challenge = URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.as_bytes()).as_ref());
    let state = random_url_safe(12);
    let redirect = callback(issuer);
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("client_id", CLIENT),
            ("response_type", "code"),
            ("scope", "openid email"),
            ("redirect_uri", redirect.as_str()),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state.as_str()),
            ("resource", RESOURCE),
        ])
        .finish();
    let mut browser = Browser::new();
    let mut page = browser
        .send("GET", &format!("{issuer}/auth?{query}"), None, None)
        .await?;
    // Follow redirects; answer the login and consent pages as a person would.
    for _ in 0..10 {
        match (page.status, page.location.clone()) {
            (300..=399, Some(location)) => {
                let url = absolute(issuer, &location);
                if url.starts_with(&redirect) {
                    return exchange(&mut browser, issuer, &url, &state, &verifier).await;
                }
                page = browser.send("GET", &url, None, None).await?;
                if page.status == 200 {
                    let form: Vec<(&str, &str)> = if page.body.contains("name=\"login\"") {
                        vec![("prompt", "login"), ("login", login), ("password", "local")]
                    } else {
                        vec![("prompt", "consent")]
                    };
                    page = browser.send("POST", &url, Some(&form), None).await?;
                }
            }
            (status, _) => {
                return Err(format!(
                    "sign-in as {login}: the provider answered {status}: {}",
                    page.body.chars().take(300).collect::<String>()
                ))
            }
        }
    }
    Err(format!("sign-in as {login}: too many redirects"))
}

/// Trades the code the redirect carries for the tokens; the access token.
async fn exchange(
    browser: &mut Browser,
    issuer: &str,
    redirected: &str,
    state: &str,
    verifier: &str,
) -> Result<String, String> {
    let query = redirected.split_once('?').map_or("", |(_, q)| q);
    let params: HashMap<String, String> = form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if params.get("state").map(String::as_str) != Some(state) {
        return Err("sign-in: the redirect's state is not the request's".into());
    }
    let code = params
        .get("code")
        .ok_or_else(|| format!("sign-in refused: {query}"))?;
    let redirect = callback(issuer);
    let page = browser
        .send(
            "POST",
            &format!("{issuer}/token"),
            Some(&[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", &redirect),
                ("client_id", CLIENT),
                ("code_verifier", verifier),
                ("resource", RESOURCE),
            ]),
            None,
        )
        .await?;
    access_token(page)
}

/// A client-credentials token of the local service client: a machine.
pub async fn client_credentials(issuer: &str) -> Result<String, String> {
    let page = Browser::new()
        .send(
            "POST",
            &format!("{issuer}/token"),
            Some(&[
                ("grant_type", "client_credentials"),
                ("resource", RESOURCE),
                ("scope", "openid"),
            ]),
            Some((SERVICE_CLIENT, SERVICE_SECRET)),
        )
        .await?;
    access_token(page)
}

fn access_token(page: Page) -> Result<String, String> {
    let answer: Value = serde_json::from_str(&page.body)
        .map_err(|_| format!("token endpoint answered {}: {}", page.status, page.body))?;
    answer["access_token"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("token endpoint answered {}: {answer}", page.status))
}
