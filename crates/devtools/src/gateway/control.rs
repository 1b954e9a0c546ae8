//! The calls of API Gateway's management API the stack makes: a REST API
//! stage's `FlushStageAuthorizersCache` (`DELETE
//! /restapis/{restApiId}/stages/{stageName}/cache/authorizers`) and an
//! HTTP API stage's `ResetAuthorizersCache` (`DELETE
//! /v2/apis/{apiId}/stages/{stageName}/cache/authorizers`), which recompute
//! sends after revocations to every stage the authorizer protects. Like
//! the account's management API it serves every stage registered with it
//! (this stack's and the example's), each allowed only to a function whose
//! IAM policy grants `apigateway:DELETE` on that stage's authorizer cache
//! (the template's, or a policy another stack attaches to the function's
//! role), as AWS would; answered 202 (REST) or 204 (HTTP API) with the
//! result cache emptied, in the shapes API Gateway answers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use aws_lambda_events::http::{HeaderMap, Method, StatusCode};
use hyper::body::Bytes;
use serde_json::json;
use testkit::iam::Decision;

use super::{Gateway, Reply};

/// The one action its calls need.
const ACTION: &str = "apigateway:DELETE";

/// The management API's paths start with one of these.
pub const PREFIXES: [&str; 2] = ["/restapis/", "/v2/apis/"];

/// The management API: who may flush, and the stages it can flush, by
/// their path (`restapis/{api}/stages/{stage}`, `apis/{api}/stages/{stage}`).
pub struct Control {
    /// The functions' IAM policies; `None`: nobody may flush.
    policies: Option<testkit::iam::Policies>,
    stages: Mutex<BTreeMap<String, Weak<Gateway>>>,
    /// Where each decision is recorded for the policy mutation check (the
    /// usage log, and the key the test goes by in it), if anywhere.
    usage: Option<(PathBuf, String)>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stages: Vec<String> = self
            .stages
            .lock()
            .map(|s| s.keys().cloned().collect())
            .unwrap_or_default();
        f.debug_struct("Control").field("stages", &stages).finish()
    }
}

impl Control {
    pub fn new(policies: Option<testkit::iam::Policies>) -> Arc<Self> {
        Self::with(policies, None)
    }

    /// As [`Control::new`], each call's use (or denial) of
    /// `apigateway:DELETE` recorded in the usage log (`AUTHZ_IAM_USAGE`,
    /// when set) for the running test, which goes by `key` there.
    pub fn recorded(policies: testkit::iam::Policies, key: &str) -> Arc<Self> {
        let usage = testkit::usage::log_path().map(|path| {
            testkit::usage::record_table(key);
            (path, key.to_string())
        });
        Self::with(Some(policies), usage)
    }

    fn with(
        policies: Option<testkit::iam::Policies>,
        usage: Option<(PathBuf, String)>,
    ) -> Arc<Self> {
        Arc::new(Self {
            policies,
            stages: Mutex::new(BTreeMap::new()),
            usage,
        })
    }

    /// Serves `gateway`'s stage as `path` (`restapis/local/stages/prod`).
    pub fn register(&self, path: &str, gateway: &Arc<Gateway>) {
        self.stages
            .lock()
            .expect("stages lock")
            .insert(path.to_string(), Arc::downgrade(gateway));
    }

    /// Answers a management API request (`path` starts with one of
    /// [`PREFIXES`]).
    pub(super) fn answer(&self, method: &Method, path: &str, headers: &HeaderMap) -> Reply {
        // The SDK escapes a stage's `$` (`%24default`).
        let path = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let (stage_path, operation, done) = match parts.as_slice() {
            ["restapis", api, "stages", stage, "cache", "authorizers"] => (
                format!("restapis/{api}/stages/{stage}"),
                "FlushStageAuthorizersCache",
                StatusCode::ACCEPTED,
            ),
            ["v2", "apis", api, "stages", stage, "cache", "authorizers"] => (
                format!("apis/{api}/stages/{stage}"),
                "ResetAuthorizersCache",
                StatusCode::NO_CONTENT,
            ),
            _ => {
                return Reply::gateway(
                    404,
                    "NotFoundException",
                    json!({"message": "The requested resource is not supported by the local gateway"}),
                )
            }
        };
        if method != Method::DELETE {
            return Reply::gateway(
                405,
                "MethodNotAllowedException",
                json!({"message": format!("Only DELETE ({operation}) is supported")}),
            );
        }
        // In the region the template's `${AWS::Region}` is in locally (the
        // IAM check's, DynamoDB Local's).
        let resource = format!(
            "arn:aws:apigateway:{}::/{stage_path}/cache/authorizers",
            testkit::iam::REGION
        );
        let caller = testkit::proxy::caller(headers);
        let allowed = match (&self.policies, &caller) {
            (Some(policies), Some(caller)) => {
                policies.decide(caller, ACTION, &resource, None) == Decision::Allow
            }
            _ => false,
        };
        if let (Some((log, key)), Some(policies), Some(caller)) =
            (&self.usage, &self.policies, &caller)
        {
            testkit::usage::record_decision(log, key, policies, caller, ACTION, allowed);
        }
        if !allowed {
            let who = caller.as_deref().unwrap_or("an unknown caller");
            return Reply::gateway(
                403,
                "AccessDeniedException",
                json!({"message": format!("User: {who} is not authorized to perform: {ACTION} on resource: {resource}")}),
            );
        }
        let gateway = self
            .stages
            .lock()
            .expect("stages lock")
            .get(&stage_path)
            .and_then(Weak::upgrade);
        let Some(gateway) = gateway else {
            return Reply::gateway(
                404,
                "NotFoundException",
                json!({"message": "Invalid stage identifier specified"}),
            );
        };
        gateway.flush_results();
        Reply {
            status: done,
            headers: HeaderMap::new(),
            body: Bytes::new(),
            ..Default::default()
        }
    }
}

impl Gateway {
    /// Empties the authorizer result cache, as a flush does.
    pub fn flush_results(&self) {
        if let Some(results) = &self.results {
            results.invalidate_all();
        }
        self.flushes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}
