//! The Lambda handler: REST API REQUEST authorizer events (IAM policy
//! responses) and HTTP API payload 2.0 events (simple responses), one JSON
//! log line and one EMF metrics line per decision, never the token.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use authz_core::runtime::metrics::{dimension, name, outcome};
use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerRequestTypeRequest, ApiGatewayV2CustomAuthorizerV2Request,
};
use serde_json::Value;

use crate::answer::Answer;
use crate::decision::{Decision, Failure, Request, Trace};
use crate::jwks::JwksSource;
use crate::response::simple_response;
use crate::Authorizer;

/// What the Lambda returns: a response (shared with the answer cache), or
/// an error whose message API Gateway reads (`Unauthorized` is its 401;
/// anything else its 500).
pub type Outcome = Result<Arc<Value>, Failure>;

fn header<'a>(headers: &'a aws_lambda_events::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Handles one invocation event (either shape).
pub async fn handle<S: JwksSource>(authorizer: &Authorizer<S>, event: Value) -> Outcome {
    let started = Instant::now();
    let is_v2 = event.get("version").and_then(Value::as_str) == Some("2.0");
    let mut trace = Trace::default();
    let (result, method, resource) = if is_v2 {
        let e: ApiGatewayV2CustomAuthorizerV2Request = match serde_json::from_value(event) {
            Ok(e) => e,
            Err(e) => return malformed(e, &trace, started),
        };
        // The route key is "METHOD /path/{param}", where METHOD is `ANY`
        // for an ANY route: the request's method is the context's.
        let route_key = e.route_key.clone().unwrap_or_default();
        let resource = route_key
            .split_once(' ')
            .map_or(route_key.as_str(), |(_, r)| r)
            .to_string();
        let method = e.request_context.http.method.to_string();
        let request = Request {
            authorization: header(&e.headers, authorizer.token_header()),
            method: &method,
            resource: &resource,
            path_parameters: &e.path_parameters,
            method_arn: e.route_arn.as_deref().unwrap_or_default(),
            source_ip: e
                .request_context
                .http
                .source_ip
                .as_deref()
                .unwrap_or_default(),
            path: e.request_context.http.path.as_deref().unwrap_or_default(),
        };
        let decided = authorizer.decide(&request, &mut trace).await;
        let response = decided.map(|d| {
            let value = simple_response(&d);
            Arc::new(Answer::uncached(d, value))
        });
        (response, method, resource)
    } else {
        let e: ApiGatewayCustomAuthorizerRequestTypeRequest = match serde_json::from_value(event) {
            Ok(e) => e,
            Err(e) => return malformed(e, &trace, started),
        };
        let method = e
            .http_method
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default();
        let resource = e.resource.clone().unwrap_or_default();
        let method_arn = e.method_arn.clone().unwrap_or_default();
        let source_ip = e
            .request_context
            .identity
            .as_ref()
            .and_then(|i| i.source_ip.clone())
            .unwrap_or_default();
        let path = e.path.clone().unwrap_or_default();
        let empty = HashMap::new();
        let request = Request {
            authorization: header(&e.headers, authorizer.token_header()),
            method: &method,
            resource: &resource,
            path_parameters: if e.path_parameters.is_empty() {
                &empty
            } else {
                &e.path_parameters
            },
            method_arn: &method_arn,
            source_ip: &source_ip,
            path: &path,
        };
        let response = authorizer.answer_rest(&request, &mut trace).await;
        (response, method, resource)
    };
    report(result, &method, &resource, &trace, started)
}

/// An event neither shape reads: `Unauthorized`, logged and counted. The
/// reason says where, not what: serde's message quotes the value it
/// refused, which may be a header carrying the token.
fn malformed(e: serde_json::Error, trace: &Trace, started: Instant) -> Outcome {
    let failure = Failure::Unauthorized(format!(
        "event: not an authorizer event ({:?} error at line {}, column {})",
        e.classify(),
        e.line(),
        e.column()
    ));
    report(Err(failure), "", "", trace, started)
}

/// No determining policies.
static NO_POLICIES: Vec<authz_core::policy::cedar::Determining> = Vec::new();

/// Logs the decision (one line, never the token), records its metrics
/// (one EMF line when the invocation ends) and returns what API Gateway
/// receives.
fn report(
    result: Result<Arc<Answer>, Failure>,
    method: &str,
    resource: &str,
    trace: &Trace,
    started: Instant,
) -> Outcome {
    let latency_us = started.elapsed().as_micros() as u64;
    match result {
        Ok(answer) => {
            let (outcome, reason, user, tenant, policies) = match &answer.decision {
                Decision::Allow(a) => (
                    outcome::ALLOW,
                    "permitted",
                    a.user_id.to_string(),
                    a.tenant_id.map(|t| t.to_string()),
                    &a.policies,
                ),
                Decision::SignUp(s) => (
                    outcome::ALLOW,
                    "signing up",
                    format!("identity {}", s.identity_id),
                    s.tenant_id.map(|t| t.to_string()),
                    &NO_POLICIES,
                ),
                Decision::Directory(d) => (
                    outcome::ALLOW,
                    "a tenant's directory",
                    d.principal(),
                    Some(d.tenant_id.to_string()),
                    &NO_POLICIES,
                ),
                Decision::Deny {
                    user_id,
                    tenant_id,
                    reason,
                    policies,
                } => (
                    outcome::DENY,
                    *reason,
                    user_id.to_string(),
                    tenant_id.map(|t| t.to_string()),
                    policies,
                ),
            };
            // The determining policies, as `name (id)`.
            let policies = policies
                .iter()
                .map(|p| format!("{} ({})", p.name, p.policy_id))
                .collect::<Vec<_>>()
                .join(", ");
            tracing::info!(
                decision = outcome,
                reason,
                user_id = %user,
                tenant_id = tenant.as_deref().unwrap_or(""),
                route = %format!("{method} {resource}"),
                policies,
                token_cache_hit = trace.token_cached,
                inputs_cache_hit = trace.inputs_cached,
                answer_cache_hit = trace.answer_cached,
                latency_us,
                "decision"
            );
            record(outcome, latency_us, trace);
            Ok(answer.response.clone())
        }
        Err(failure) => {
            let (outcome, reason) = match &failure {
                Failure::Unauthorized(r) => (outcome::UNAUTHORIZED, r.as_str()),
                Failure::Dependency(r) => (outcome::ERROR, r.as_str()),
            };
            tracing::warn!(
                decision = outcome,
                reason,
                route = %format!("{method} {resource}"),
                token_cache_hit = trace.token_cached,
                latency_us,
                "decision"
            );
            record(outcome, latency_us, trace);
            Err(failure)
        }
    }
}

/// A decision's metrics, all with its outcome as a dimension so that one
/// decision is one EMF line.
fn record(outcome: &'static str, latency_us: u64, trace: &Trace) {
    let counted = |name: &'static str, yes: bool| {
        if yes {
            metrics::counter!(name, dimension::OUTCOME => outcome).increment(1);
        }
    };
    counted(name::DECISIONS, true);
    counted(name::TOKEN_CACHE_HITS, trace.token_cached);
    counted(name::INPUT_CACHE_HITS, trace.inputs_cached);
    counted(name::ANSWER_CACHE_HITS, trace.answer_cached);
    metrics::histogram!(name::DECISION_LATENCY, dimension::OUTCOME => outcome)
        .record(latency_us as f64);
}
