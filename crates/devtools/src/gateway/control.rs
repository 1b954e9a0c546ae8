//! The one call of API Gateway's management API the stack makes:
//! `FlushStageAuthorizersCache` (`DELETE
//! /restapis/{restApiId}/stages/{stageName}/cache/authorizers`), which
//! recompute sends after revocations. Allowed only to a function whose
//! IAM policy in the template grants `apigateway:DELETE` on that stage's
//! authorizer cache, as AWS would; answered 202 with the result cache
//! emptied, in the shapes API Gateway answers.

use aws_lambda_events::http::{HeaderMap, Method, StatusCode};
use hyper::body::Bytes;
use serde_json::json;
use testkit::iam::Decision;

use super::{Gateway, Reply};

/// The management API's paths start here.
pub const PREFIX: &str = "/restapis/";

impl Gateway {
    /// Answers a management API request (`path` starts with [`PREFIX`]).
    pub(super) fn control(&self, method: &Method, path: &str, headers: &HeaderMap) -> Reply {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let ["restapis", api, "stages", stage, "cache", "authorizers"] = parts.as_slice() else {
            return Reply::gateway(
                404,
                "NotFoundException",
                json!({"message": "The requested resource is not supported by the local gateway"}),
            );
        };
        if method != Method::DELETE {
            return Reply::gateway(
                405,
                "MethodNotAllowedException",
                json!({"message": "Only DELETE (FlushStageAuthorizersCache) is supported"}),
            );
        }
        if *api != self.config.api_id || *stage != self.config.api.stage {
            return Reply::gateway(
                404,
                "NotFoundException",
                json!({"message": "Invalid stage identifier specified"}),
            );
        }
        // In the region the template's `${AWS::Region}` is in locally (the
        // IAM check's, DynamoDB Local's).
        let resource = format!(
            "arn:aws:apigateway:{}::/restapis/{api}/stages/{stage}/cache/authorizers",
            testkit::iam::REGION
        );
        let caller = testkit::proxy::caller(headers);
        let allowed = match (&self.config.control_policies, &caller) {
            (Some(policies), Some(caller)) => {
                policies.decide(caller, "apigateway:DELETE", &resource, None) == Decision::Allow
            }
            _ => false,
        };
        if !allowed {
            let who = caller.as_deref().unwrap_or("an unknown caller");
            return Reply::gateway(
                403,
                "AccessDeniedException",
                json!({"message": format!("User: {who} is not authorized to perform: apigateway:DELETE on resource: {resource}")}),
            );
        }
        if let Some(results) = &self.results {
            results.invalidate_all();
        }
        self.flushes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Reply {
            status: StatusCode::ACCEPTED,
            headers: HeaderMap::new(),
            body: Bytes::new(),
            ..Default::default()
        }
    }
}
