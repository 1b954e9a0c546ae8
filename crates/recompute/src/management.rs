//! API Gateway's management API as recompute calls it: a REST API stage's
//! `FlushStageAuthorizersCache` (`DELETE
//! /restapis/{api}/stages/{stage}/cache/authorizers`) and an HTTP API
//! stage's `ResetAuthorizersCache` (`DELETE
//! /v2/apis/{api}/stages/{stage}/cache/authorizers`), each signed with
//! SigV4 by `aws-sigv4` (the SDK's own signer) with the SDK configuration's
//! credentials, and sent over hyper and rustls (the SDK's HTTP stack),
//! trusting the process's roots.
//!
//! Not through the SDK's API Gateway clients: for two bodiless calls they
//! are 317,000 lines of generated code (`aws-sdk-apigateway` and
//! `aws-sdk-apigatewayv2`), over a minute of every cold build of the
//! workspace and more of each release build (docs/testing.md). What those
//! clients did is done here the same way: the endpoint is the SDK's
//! (`AWS_ENDPOINT_URL_API_GATEWAY`, or `AWS_ENDPOINT_URL_APIGATEWAYV2` for
//! HTTP APIs, or the shared config's `endpoint_url` for that service, or
//! `AWS_ENDPOINT_URL`, else the region's), the User-Agent names the SDK
//! configuration's app name, and API Gateway's errors are read from its
//! `x-amzn-ErrorType` header and JSON `message`. Retrying is the caller's
//! ([`ManagementError::is_retryable`]).

use std::time::{Duration, SystemTime};

use aws_config::SdkConfig;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_smithy_runtime_api::client::identity::Identity;
use aws_types::service_config::ServiceConfigKey;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use authz_core::runtime::tls::TrustRoots;

/// The name API Gateway's requests are signed for, both versions.
const SIGNING_NAME: &str = "apigateway";

/// The longest one call may take, connection included.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of an error body read (API Gateway's are a short JSON object).
const MAX_ERROR_BODY: usize = 16 * 1024;

/// Which of API Gateway's two management APIs a stage belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// REST APIs (API Gateway V1).
    Rest,
    /// HTTP APIs (API Gateway V2).
    Http,
}

impl Api {
    /// The SDK's service id, by which its endpoint settings are found.
    fn service_id(self) -> &'static str {
        match self {
            Self::Rest => "API Gateway",
            Self::Http => "ApiGatewayV2",
        }
    }

    /// The collection its APIs are under in the management API's paths.
    pub fn collection(self) -> &'static str {
        match self {
            Self::Rest => "restapis",
            Self::Http => "apis",
        }
    }

    /// The operation that empties a stage's authorizer cache.
    pub fn operation(self) -> &'static str {
        match self {
            Self::Rest => "FlushStageAuthorizersCache",
            Self::Http => "ResetAuthorizersCache",
        }
    }

    /// That operation's path for `api`'s `stage` (already escaped).
    fn path(self, api: &str, stage: &str) -> String {
        let stage = percent_encoding::utf8_percent_encode(stage, LABEL);
        let version = match self {
            Self::Rest => "",
            Self::Http => "/v2",
        };
        let collection = self.collection();
        format!("{version}/{collection}/{api}/stages/{stage}/cache/authorizers")
    }
}

/// What a path label escapes, as the SDK does (RFC 3986's unreserved
/// characters stay; `$default` is sent `%24default`).
const LABEL: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Why a call did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum ManagementError {
    /// API Gateway answered with an error (`TooManyRequestsException`,
    /// `AccessDeniedException`, `NotFoundException`...).
    #[error("{operation}: {status} {code}: {message}")]
    Refused {
        operation: &'static str,
        status: u16,
        code: String,
        message: String,
    },
    /// No answer: the connection failed or timed out.
    #[error("{operation}: {reason}")]
    Unanswered {
        operation: &'static str,
        reason: String,
    },
    /// The request could not be made: no credentials, or none usable.
    #[error("{operation}: {reason}")]
    Unsigned {
        operation: &'static str,
        reason: String,
    },
}

impl ManagementError {
    /// Whether the same call may succeed later: throttling, API Gateway's
    /// own failures and no answer; not a refusal (access denied, a stage
    /// that does not exist) nor missing credentials.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Refused { status, .. } => *status == 429 || *status >= 500,
            Self::Unanswered { .. } => true,
            Self::Unsigned { .. } => false,
        }
    }
}

/// The client of both management APIs.
#[derive(Clone)]
pub struct Management {
    /// Each API's endpoint (scheme and authority, no trailing slash).
    rest_endpoint: String,
    http_endpoint: String,
    region: String,
    credentials: Option<SharedCredentialsProvider>,
    user_agent: String,
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>,
}

impl std::fmt::Debug for Management {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Management")
            .field("rest_endpoint", &self.rest_endpoint)
            .field("http_endpoint", &self.http_endpoint)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl Management {
    /// From the SDK configuration: its region, credentials, app name and
    /// endpoint settings. No request is made until a call.
    pub fn new(sdk: &SdkConfig) -> Self {
        let region = sdk
            .region()
            .map(|r| r.as_ref().to_string())
            .unwrap_or_default();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(TrustRoots::global().rustls_config())
            .https_or_http()
            .enable_http1()
            .build();
        let app = sdk
            .app_name()
            .map(|a| format!(" app/{a}"))
            .unwrap_or_default();
        Self {
            rest_endpoint: endpoint(sdk, Api::Rest, &region),
            http_endpoint: endpoint(sdk, Api::Http, &region),
            region,
            credentials: sdk.credentials_provider(),
            user_agent: format!("authz-recompute/{}{app}", env!("CARGO_PKG_VERSION")),
            client: Client::builder(TokioExecutor::new()).build(https),
        }
    }

    /// Empties the authorizer cache of `api`'s `stage`: one signed
    /// request, within [`CALL_TIMEOUT`].
    pub async fn flush(&self, kind: Api, api: &str, stage: &str) -> Result<(), ManagementError> {
        let operation = kind.operation();
        let endpoint = match kind {
            Api::Rest => &self.rest_endpoint,
            Api::Http => &self.http_endpoint,
        };
        let url = format!("{endpoint}{}", kind.path(api, stage));
        let request = self
            .signed(kind, &url, authz_core::clock::system_now())
            .await?;
        let call =
            async {
                let response = self.client.request(request).await.map_err(|e| {
                    ManagementError::Unanswered {
                        operation,
                        reason: format!("DELETE {url}: {}", authz_core::error::causes(&e)),
                    }
                })?;
                let status = response.status();
                if status.is_success() {
                    return Ok(());
                }
                let code = response
                    .headers()
                    .get("x-amzn-errortype")
                    .and_then(|v| v.to_str().ok())
                    .map(|v| v.split(':').next().unwrap_or(v).to_string());
                let body = Limited::new(response.into_body(), MAX_ERROR_BODY)
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let text = |key: &str| body.get(key).and_then(|v| v.as_str()).map(str::to_string);
                Err(ManagementError::Refused {
                    operation,
                    status: status.as_u16(),
                    code: code.or_else(|| text("__type")).unwrap_or_else(|| {
                        status.canonical_reason().unwrap_or("error").to_string()
                    }),
                    message: text("message")
                        .or_else(|| text("Message"))
                        .unwrap_or_default(),
                })
            };
        tokio::time::timeout(CALL_TIMEOUT, call)
            .await
            .map_err(|_| ManagementError::Unanswered {
                operation,
                reason: format!("DELETE {url}: no answer within {CALL_TIMEOUT:?}"),
            })?
    }

    /// `DELETE url`, signed at `time` with the configuration's credentials.
    async fn signed(
        &self,
        kind: Api,
        url: &str,
        time: SystemTime,
    ) -> Result<hyper::Request<Empty<Bytes>>, ManagementError> {
        let operation = kind.operation();
        let unsigned = |reason: String| ManagementError::Unsigned { operation, reason };
        let provider = self
            .credentials
            .as_ref()
            .ok_or_else(|| unsigned("no credentials provider is configured".into()))?;
        let credentials = provider
            .provide_credentials()
            .await
            .map_err(|e| unsigned(format!("credentials: {e}")))?;
        let identity = Identity::from(credentials);
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(SIGNING_NAME)
            .time(time)
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| unsigned(format!("signing: {e}")))?
            .into();
        // As the SDK's clients send it: the JSON they read back (REST
        // APIs), and who calls in both User-Agent headers.
        let mut request = hyper::Request::delete(url);
        if kind == Api::Rest {
            request = request.header("accept", "application/json");
        }
        let mut request = request
            .header("user-agent", &self.user_agent)
            .header("x-amz-user-agent", &self.user_agent)
            .body(Empty::new())
            .map_err(|e| unsigned(format!("DELETE {url}: {e}")))?;
        let headers = request
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_str().unwrap_or_default()));
        let signable = SignableRequest::new("DELETE", url, headers, SignableBody::Bytes(&[]))
            .map_err(|e| unsigned(format!("signing: {e}")))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| unsigned(format!("signing: {e}")))?
            .into_parts();
        instructions.apply_to_request_http1x(&mut request);
        Ok(request)
    }
}

/// `api`'s endpoint as the SDK finds it: the service's own setting (its
/// `AWS_ENDPOINT_URL_<SERVICE>` variable or the shared config's
/// `endpoint_url`), then `AWS_ENDPOINT_URL`, else the region's (FIPS when
/// the configuration asks for it; China's regions in their own domain).
fn endpoint(sdk: &SdkConfig, api: Api, region: &str) -> String {
    let key = ServiceConfigKey::builder()
        .service_id(api.service_id())
        .env("AWS_ENDPOINT_URL")
        .profile("endpoint_url")
        .build()
        .expect("every field is set");
    let configured = if sdk.get_origin("endpoint_url").is_client_config() {
        sdk.endpoint_url().map(str::to_string)
    } else {
        sdk.service_config()
            .and_then(|c| c.load_config(key))
            .or_else(|| sdk.endpoint_url().map(str::to_string))
    };
    match configured {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => {
            let host = if sdk.use_fips() == Some(true) {
                "apigateway-fips"
            } else {
                "apigateway"
            };
            let domain = if region.starts_with("cn-") {
                "amazonaws.com.cn"
            } else {
                "amazonaws.com"
            };
            format!("https://{host}.{region}.{domain}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sdk(endpoint: Option<&str>, region: &str) -> SdkConfig {
        let mut b = SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new(region.to_string()));
        if let Some(e) = endpoint {
            b = b.endpoint_url(e);
        }
        b.build()
    }

    #[test]
    fn endpoints_are_the_regions_unless_configured() {
        let m = Management::new(&sdk(None, "eu-west-1"));
        assert_eq!(
            m.rest_endpoint,
            "https://apigateway.eu-west-1.amazonaws.com"
        );
        assert_eq!(
            m.http_endpoint,
            "https://apigateway.eu-west-1.amazonaws.com"
        );
        let cn = Management::new(&sdk(None, "cn-north-1"));
        assert_eq!(
            cn.rest_endpoint,
            "https://apigateway.cn-north-1.amazonaws.com.cn"
        );
        let local = Management::new(&sdk(Some("http://127.0.0.1:4000/"), "us-east-1"));
        assert_eq!(local.rest_endpoint, "http://127.0.0.1:4000");
        assert_eq!(local.http_endpoint, "http://127.0.0.1:4000");
    }

    #[test]
    fn paths_escape_the_stage_as_the_sdk_does() {
        assert_eq!(
            Api::Http.path("h1", "$default"),
            "/v2/apis/h1/stages/%24default/cache/authorizers"
        );
        assert_eq!(
            Api::Rest.path("a1", "prod-2_x"),
            "/restapis/a1/stages/prod-2_x/cache/authorizers"
        );
    }

    /// Signed exactly as the SDK's clients signed the same requests
    /// (`aws-sdk-apigateway` 1.125.0 and `aws-sdk-apigatewayv2` 1.123.0,
    /// recorded with the same credentials, time and headers): what API
    /// Gateway verifies.
    #[tokio::test]
    async fn requests_are_signed_as_the_sdks_clients_signed_them() {
        let sdk = SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("eu-west-1"))
            .endpoint_url("http://127.0.0.1:4000")
            .credentials_provider(SharedCredentialsProvider::new(
                aws_credential_types::Credentials::new(
                    "AKIDEXAMPLE",
                    "secret",
                    Some("tok".into()),
                    None,
                    "test",
                ),
            ))
            .build();
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        let sdk_agent = |api: &str, version: &str| {
            format!("aws-sdk-rust/1.7.0 ua/2.1 api/{api}/{version} os/linux lang/rust/1.95.0 m/E,N md/http#hyper-1.x")
        };
        for (kind, api, stage, agent, signed, signature) in [
            (
                Api::Rest,
                "a1",
                "prod",
                sdk_agent("apigateway", "1.125.0"),
                "accept;host;x-amz-date;x-amz-security-token;x-amz-user-agent",
                "3a85349cc63d4d0473b7e558d63ccf5ad2742fd52639ed37aeb53f1856d726b2",
            ),
            (
                Api::Http,
                "h1",
                "$default",
                sdk_agent("apigatewayv2", "1.123.0"),
                "host;x-amz-date;x-amz-security-token;x-amz-user-agent",
                "73e2153c6ef17062eaf91c1736e21735f8ea0565e4e17387f201d2c156d25e2c",
            ),
        ] {
            let management = Management {
                user_agent: agent,
                ..Management::new(&sdk)
            };
            let url = format!("{}{}", management.rest_endpoint, kind.path(api, stage));
            let request = management.signed(kind, &url, at).await.unwrap();
            assert_eq!(request.headers()["x-amz-date"], "20260921T141320Z");
            assert_eq!(request.headers()["x-amz-security-token"], "tok");
            assert_eq!(
                request.headers()["authorization"],
                format!("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260921/eu-west-1/apigateway/aws4_request, SignedHeaders={signed}, Signature={signature}").as_str()
            );
        }
    }

    #[test]
    fn throttling_and_failures_are_retried_refusals_are_not() {
        let refused = |status| ManagementError::Refused {
            operation: "FlushStageAuthorizersCache",
            status,
            code: "X".into(),
            message: String::new(),
        };
        assert!(refused(429).is_retryable());
        assert!(refused(503).is_retryable());
        assert!(!refused(403).is_retryable());
        assert!(!refused(404).is_retryable());
    }
}
