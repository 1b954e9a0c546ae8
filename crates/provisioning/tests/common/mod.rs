//! Drives the provisioning API the way Lambda does: an API Gateway REST
//! proxy event (from `events/`) turned into a request by `lambda_http`,
//! answered by the app, against a fresh DynamoDB Local table.

#![allow(dead_code)]

use std::collections::HashMap;

use axum::body::to_bytes;
use axum::http::HeaderMap;
use serde_json::{json, Value};
use tower::ServiceExt;

use authz_core::Store;
use testkit::{RequestCounter, TestTable};

/// A client (with no table behind it) whose every `GetItem` DynamoDB
/// throttles, past the SDK's two attempts.
pub fn throttled_reads() -> aws_sdk_dynamodb::Client {
    use aws_sdk_dynamodb::config::retry::RetryConfig;
    use aws_smithy_mocks::{mock, mock_client, RuleMode};
    let throttled = mock!(aws_sdk_dynamodb::Client::get_item)
        .sequence()
        .http_response(|| {
            aws_smithy_runtime_api::http::Response::new(
                aws_smithy_runtime_api::http::StatusCode::try_from(400).unwrap(),
                aws_smithy_types::body::SdkBody::from(r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}"#),
            )
        })
        .times(2)
        .build();
    mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&throttled], |c| c
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(2)
                .with_initial_backoff(std::time::Duration::from_millis(1))
        ))
}

/// A REST proxy event as API Gateway sends it (stage `prod`, an authorizer
/// context with a `principalId`).
const BASE_EVENT: &str = include_str!("../../../../events/provisioning-create-tenant.json");

pub const PRINCIPAL: &str = "01J8YZZQ3V8PZKQ0ZKX4C2M7FM";

/// The API over a table of its own, with a client that counts requests.
/// The shipped schema and rules, with the template's cache settings
/// (API Gateway's result TTL 300 s, not keyed on the source IP).
pub fn statement_rules() -> provisioning::StatementRules {
    statement_rules_with(authz_core::policy::cedar::AnswerCaching {
        keyed_on_source_ip: false,
        result_ttl_seconds: 300,
    })
}

pub fn statement_rules_with(
    caching: authz_core::policy::cedar::AnswerCaching,
) -> provisioning::StatementRules {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../route_rules");
    provisioning::StatementRules::load(
        &format!("{root}/schema.cedarschema"),
        // A deployment protecting more than the admin API: the example
        // tickets API's rules and those of the permissions these tests
        // give (tests/rules/more.json), so roles may hold them.
        &format!(
            "{root}/provisioning.json,tickets.json,{}",
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/rules/more.json")
        ),
        caching,
    )
    .expect("the shipped schema and rules load")
}

pub struct Api {
    pub table: std::sync::Arc<TestTable>,
    pub store: Store,
    pub counter: RequestCounter,
    app: provisioning::App,
}

/// An answer: status, JSON body (Null when empty) and headers.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: HeaderMap,
}

impl Reply {
    /// The `error.field` of an error body.
    pub fn field(&self) -> Option<&str> {
        self.body["error"]["field"].as_str()
    }

    pub fn code(&self) -> Option<&str> {
        self.body["error"]["code"].as_str()
    }

    pub fn id(&self, name: &str) -> String {
        self.body[name]
            .as_str()
            .unwrap_or_else(|| panic!("{name} in {}", self.body))
            .to_string()
    }
}

/// A request to send: method, path (with query), headers, body text.
pub struct Call {
    pub method: &'static str,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// The authorizer context to send: the base event's (a platform admin
    /// holding `*`) unless set; `Some(None)` sends none.
    pub authorizer: Option<Option<Value>>,
    /// The caller's address as API Gateway saw it (the base event's
    /// `127.0.0.1` unless set).
    pub source_ip: Option<String>,
}

impl Call {
    pub fn new(method: &'static str, path: impl Into<String>) -> Self {
        Self {
            method,
            path: path.into(),
            headers: Vec::new(),
            body: None,
            authorizer: None,
            source_ip: None,
        }
    }

    /// From `ip`, as API Gateway would see the caller.
    pub fn sent_from(mut self, ip: &str) -> Self {
        self.source_ip = Some(ip.to_string());
        self
    }

    /// As the authorizer would pass it for `user`, deciding for `tenant`
    /// (None on global routes), who holds `permissions` there without end:
    /// in a tenant, through their grant only (no global permissions).
    pub fn by(self, user: &str, tenant: Option<&str>, permissions: &[&str]) -> Self {
        self.by_until(user, tenant, permissions, None)
    }

    /// As [`Call::by`], holding `permissions` until `until` (seconds since
    /// the epoch; None: without end).
    pub fn by_until(
        mut self,
        user: &str,
        tenant: Option<&str>,
        permissions: &[&str],
        until: Option<u64>,
    ) -> Self {
        let here = permissions.join(",");
        let until = until.map_or_else(|| authz_core::NO_END.to_string(), |u| u.to_string());
        self.authorizer = Some(Some(json!({
            "principalId": user,
            "userId": user,
            "tenantId": tenant.unwrap_or(""),
            "tenantGrantId": "",
            "roles": "",
            "permissions": here,
            "tenantPermissions": if tenant.is_some() { here.clone() } else { String::new() },
            "tenantPermissionsUntil": if tenant.is_some() { until.clone() } else { authz_core::NO_END.into() },
            "globalPermissions": if tenant.is_some() { String::new() } else { here.clone() },
            "globalPermissionsUntil": if tenant.is_some() { authz_core::NO_END.into() } else { until.clone() },
            "accessUntil": until,
            "integrationLatency": 3,
        })));
        self
    }

    /// As the authorizer passes it for a token of `tenant`'s directory.
    pub fn by_directory(mut self, tenant: &str, token_id: &str, name: &str) -> Self {
        self.authorizer = Some(Some(json!({
            "principalId": format!("SCIM token {name} ({token_id})"),
            "userId": "",
            "tenantId": tenant,
            "scimTokenId": token_id,
            "scimTokenName": name,
            "scimTokenUntil": "never",
            // Created by an administrator holding everything.
            "scimTokenCeiling": r#"[{"permissions":["*"],"until":null}]"#,
            "integrationLatency": 3,
        })));
        self
    }

    /// [`Call::by_directory`] with a token whose creator held `ceiling`
    /// (holdings as JSON, as the authorizer's context carries them).
    pub fn by_directory_holding(self, tenant: &str, token_id: &str, ceiling: &str) -> Self {
        let mut call = self.by_directory(tenant, token_id, "Okta");
        if let Some(Some(context)) = call.authorizer.as_mut() {
            context["scimTokenCeiling"] = json!(ceiling);
        }
        call
    }

    /// [`Call::by_directory`] with a token `creator` created, as the
    /// authorizer names them.
    pub fn by_directory_created_by(self, tenant: &str, token_id: &str, creator: &str) -> Self {
        let mut call = self.by_directory(tenant, token_id, "Okta");
        if let Some(Some(context)) = call.authorizer.as_mut() {
            context["scimTokenCreator"] = json!(creator);
        }
        call
    }

    /// [`Call::by_directory`] with a token that ends at `end` (seconds
    /// since the epoch), as the authorizer said when it decided.
    pub fn by_directory_until(self, tenant: &str, token_id: &str, end: u64) -> Self {
        let mut call = self.by_directory(tenant, token_id, "Okta");
        if let Some(Some(context)) = call.authorizer.as_mut() {
            context["scimTokenUntil"] = json!(end.to_string());
        }
        call
    }

    /// With no authorizer context, as no request through API Gateway is.
    pub fn without_authorizer(mut self) -> Self {
        self.authorizer = Some(None);
        self
    }

    pub fn json(mut self, body: Value) -> Self {
        self.body = Some(body.to_string());
        self.header("Content-Type", "application/json")
    }

    pub fn raw(mut self, content_type: &str, body: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self.header("Content-Type", content_type)
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The proxy event API Gateway would send for this call.
    pub fn event(&self) -> Value {
        let mut event: Value = serde_json::from_str(BASE_EVENT).expect("base event is JSON");
        let (path, query) = match self.path.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (self.path.clone(), None),
        };
        let mut single: HashMap<String, String> = HashMap::new();
        let mut multi: HashMap<String, Vec<String>> = HashMap::new();
        if let Some(q) = &query {
            for (k, v) in form_urlencoded_pairs(q) {
                single.insert(k.clone(), v.clone());
                multi.entry(k).or_default().push(v);
            }
        }
        let mut headers = json!({"Host": "0123456789.execute-api.us-east-1.amazonaws.com", "Accept": "application/json"});
        for (k, v) in &self.headers {
            headers[k] = json!(v);
        }
        let multi_headers: serde_json::Map<String, Value> = headers
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), json!([v])))
            .collect();
        event["httpMethod"] = json!(self.method);
        event["path"] = json!(path);
        event["resource"] = json!(path);
        event["pathParameters"] = Value::Null;
        event["queryStringParameters"] = if single.is_empty() {
            Value::Null
        } else {
            json!(single)
        };
        event["multiValueQueryStringParameters"] = if multi.is_empty() {
            Value::Null
        } else {
            json!(multi)
        };
        event["headers"] = headers;
        event["multiValueHeaders"] = Value::Object(multi_headers);
        event["body"] = self.body.as_ref().map_or(Value::Null, |b| json!(b));
        event["isBase64Encoded"] = json!(false);
        event["requestContext"]["path"] = json!(format!("/prod{path}"));
        event["requestContext"]["httpMethod"] = json!(self.method);
        if let Some(ip) = &self.source_ip {
            event["requestContext"]["identity"]["sourceIp"] = json!(ip);
        }
        match &self.authorizer {
            None => {}
            Some(Some(context)) => event["requestContext"]["authorizer"] = context.clone(),
            Some(None) => {
                event["requestContext"]
                    .as_object_mut()
                    .expect("requestContext")
                    .remove("authorizer");
            }
        }
        event
    }
}

/// The query's pairs, decoded as API Gateway passes them.
fn form_urlencoded_pairs(q: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(q.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

impl Api {
    pub async fn new() -> Self {
        Self::with_client(|table, counter| table.counted_client_for("provisioning", counter)).await
    }

    /// The API over a store whose client `client` builds (for injected
    /// faults), on a fresh table.
    pub async fn with_client(
        client: impl FnOnce(&TestTable, &RequestCounter) -> aws_sdk_dynamodb::Client,
    ) -> Self {
        let table = std::sync::Arc::new(TestTable::create().await);
        let counter = RequestCounter::new();
        let store = Store::new(client(&table, &counter), table.name.clone());
        let app = provisioning::app(store.clone(), statement_rules());
        Self {
            table,
            store,
            counter,
            app,
        }
    }

    /// The API over the same table, store and request counter, checking
    /// statements with `rules` (other cache settings).
    pub fn with_statement_rules(&self, rules: provisioning::StatementRules) -> Self {
        Self {
            table: self.table.clone(),
            app: provisioning::app(self.store.clone(), rules),
            store: self.store.clone(),
            counter: self.counter.clone(),
        }
    }

    /// The API over the same table, through a client with `interceptor`
    /// (another writer acting at a chosen point).
    pub fn with_interceptor(
        &self,
        interceptor: impl aws_sdk_dynamodb::config::Intercept + 'static,
    ) -> Self {
        let client = aws_sdk_dynamodb::Client::from_conf(
            self.table
                .function_conf("provisioning")
                .interceptor(interceptor)
                .build(),
        );
        let store = Store::new(client, self.table.name.clone());
        Self {
            table: self.table.clone(),
            app: provisioning::app(store.clone(), statement_rules()),
            store,
            counter: RequestCounter::new(),
        }
    }

    /// Sends an event through lambda_http's conversion and the app.
    pub async fn event(&self, event: &Value) -> Reply {
        let request = lambda_http::request::from_str(&event.to_string())
            .expect("lambda_http accepts the event");
        let response = self
            .app
            .clone()
            .oneshot(request)
            .await
            .expect("the router is infallible");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| panic!("JSON body: {}", String::from_utf8_lossy(&bytes)))
        };
        Reply {
            status,
            body,
            headers,
        }
    }

    pub async fn send(&self, call: Call) -> Reply {
        self.event(&call.event()).await
    }

    pub async fn get(&self, path: impl Into<String>) -> Reply {
        self.send(Call::new("GET", path)).await
    }

    /// A DELETE that says why (deleting a tenant or a user needs a reason).
    pub async fn delete(&self, path: impl Into<String>) -> Reply {
        self.send(Call::new("DELETE", path).header("X-Change-Reason", "a test cleans up"))
            .await
    }

    /// Makes the base event's caller ([`PRINCIPAL`], a platform admin by
    /// its context) a user of the table holding `*` everywhere, as a
    /// deployment's admin is: what an invitation it made is re-checked
    /// against when accepted.
    pub async fn admin_user(&self) {
        let admin = authz_core::testing::user_item(
            authz_core::model::values::UserId::parse(PRINCIPAL).unwrap(),
            "platform-admin@example.com",
            &["*"],
        );
        self.table.seed(&[admin]).await;
    }

    pub async fn post(&self, path: impl Into<String>, body: Value) -> Reply {
        self.send(Call::new("POST", path).json(body)).await
    }

    pub async fn put(&self, path: impl Into<String>, body: Value) -> Reply {
        self.send(Call::new("PUT", path).json(body)).await
    }

    pub async fn patch(&self, path: impl Into<String>, body: Value) -> Reply {
        self.send(Call::new("PATCH", path).json(body)).await
    }

    /// Creates a tenant and returns its id.
    pub async fn tenant(&self, name: &str) -> String {
        let r = self.post("/tenants", json!({"name": name})).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.id("tenantId")
    }

    pub async fn user(&self, email: &str) -> String {
        let r = self.post("/users", json!({"email": email})).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.id("userId")
    }

    pub async fn role(&self, scope: &str, name: &str, permissions: &[&str]) -> String {
        let r = self
            .post(
                "/roles",
                json!({"name": name, "scope": scope, "permissions": permissions}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.id("roleId")
    }

    /// `(PK, SK)` of every item but the change history, the revocation log
    /// and the callers' counts of revoking writes (which outlive what they
    /// record and have tests of their own): for "the table did not change"
    /// and "nothing is left" checks.
    pub async fn snapshot(&self) -> Vec<(String, String)> {
        let mut keys = self.table.keys().await;
        let log = authz_core::model::keys::revocations();
        keys.retain(|(pk, sk)| {
            !pk.starts_with("HISTORY#")
                && !pk.starts_with("RATE#")
                && (pk, sk) != (&log.pk, &log.sk)
        });
        keys
    }

    /// Every item's `Type`.
    pub async fn count_type(&self, item_type: &str) -> usize {
        self.table
            .scan_all()
            .await
            .iter()
            .filter(|i| {
                i.get("Type")
                    .and_then(|t| t.as_s().ok())
                    .map(String::as_str)
                    == Some(item_type)
            })
            .count()
    }
}

/// Waits, if it is late in one, for the next window of the revoking-write
/// limits, so that a slow machine's writes fall in one window too; one may
/// still end mid-loop, so a test expects its first 429 within two
/// windows' worth of writes.
pub async fn early_in_a_revoking_window() {
    let window = authz_core::store::REVOKING_WINDOW.as_millis() as u64;
    let into = authz_core::clock::now_millis() % window;
    if into > window / 4 {
        tokio::time::sleep(std::time::Duration::from_millis(window - into)).await;
    }
}

/// A user whose primary address is verified (an admin vouches for it).
pub async fn verified_user(api: &Api, email: &str) -> String {
    let user = api.user(email).await;
    let addresses = api.get(format!("/users/{user}/emails")).await;
    let email_id = addresses.body["items"][0]["emailId"].as_str().unwrap();
    let vouched = api
        .post(
            format!("/users/{user}/emails/{email_id}/verify"),
            json!({"verified": true}),
        )
        .await;
    assert_eq!(vouched.status, 200, "{}", vouched.body);
    user
}
