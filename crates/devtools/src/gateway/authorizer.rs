//! The REQUEST authorizer: its identity sources (401 without a call when
//! one is missing), its event, the call, the checks on its answer, the
//! result cache keyed by the identity sources, and the verdict: the
//! policy's, or an HTTP API's simple answer (`http_api`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerRequestTypeRequest,
    ApiGatewayCustomAuthorizerRequestTypeRequestContext,
    ApiGatewayCustomAuthorizerRequestTypeRequestIdentity,
};
use aws_lambda_events::query_map::QueryMap;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use testkit::template::{ApiKind, IdentitySource};

use super::iam::{self, Policy, Verdict};
use super::routes::resource_id;
use super::{Call, Gateway, Reply};
use crate::lambda::Invoked;

/// A validated authorizer result, as cached.
#[derive(Debug, Clone)]
pub(super) struct AuthorizerResult {
    verdict: Answered,
    context: Map<String, Value>,
}

/// What the authorizer answered.
#[derive(Debug, Clone)]
enum Answered {
    /// An IAM policy for a principal.
    Policy {
        principal_id: String,
        policy: Policy,
    },
    /// An HTTP API's simple answer: authorized or not.
    Simple(bool),
}

/// The authorizer's answer as it is read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    #[serde(default)]
    principal_id: Option<String>,
    policy_document: Policy,
    #[serde(default)]
    context: Value,
}

impl AuthorizerResult {
    /// Parses and checks the authorizer's answer the way API Gateway does:
    /// a principal, a policy with statements that each name an effect, and
    /// a context of strings, numbers and booleans only.
    fn parse(value: Value) -> Result<Self, String> {
        let answer: Answer = serde_json::from_value(value)
            .map_err(|e| format!("not an authorizer response: {e}"))?;
        let principal_id = answer
            .principal_id
            .filter(|p| !p.is_empty())
            .ok_or("no principalId")?;
        let context = match answer.context {
            Value::Null => Map::new(),
            Value::Object(map) => map,
            other => return Err(format!("context is not an object: {other}")),
        };
        if let Some((k, _)) = context
            .iter()
            .find(|(_, v)| !(v.is_string() || v.is_number() || v.is_boolean()))
        {
            return Err(format!(
                "context value {k:?} is not a string, number or boolean"
            ));
        }
        Ok(Self {
            verdict: Answered::Policy {
                principal_id,
                policy: answer.policy_document,
            },
            context,
        })
    }

    /// An HTTP API's simple answer, checked.
    fn simple(value: Value) -> Result<Self, String> {
        let (authorized, context) = super::http_api::simple_answer(value)?;
        Ok(Self {
            verdict: Answered::Simple(authorized),
            context,
        })
    }
}

impl Gateway {
    /// Authorizes `call`: the authorizer's context for the integration, or
    /// the gateway's answer (401, 403, 500).
    pub(super) async fn authorize(&self, call: &Call<'_>) -> Result<Map<String, Value>, Reply> {
        let http_api = self.is_http_api();
        // A REST API's method ARN; an HTTP API's route ARN has the same form.
        let method_arn = format!(
            "arn:aws:execute-api:{}:{}:{}/{}/{}/{}",
            self.config.region,
            self.config.account_id,
            self.config.api_id,
            self.config.api.stage,
            call.method,
            call.path.trim_start_matches('/')
        );
        let Some(identity) = self.identity_values(call) else {
            return Err(self.unauthorized());
        };
        let key = identity.join("\u{1f}");
        let cached = self.results.as_ref().and_then(|cache| cache.get(&key));
        let result = match cached {
            Some(hit) => hit,
            None => {
                *self
                    .calls_by_key
                    .lock()
                    .expect("calls lock")
                    .entry(key.clone())
                    .or_default() += 1;
                let result = Arc::new(self.call_authorizer(call, &method_arn, identity).await?);
                if let Some(cache) = &self.results {
                    cache.insert(key, result.clone());
                }
                result
            }
        };
        let verdict = match &result.verdict {
            Answered::Policy { policy, .. } => policy.evaluate(iam::INVOKE, &method_arn),
            Answered::Simple(true) => Verdict::Allow,
            Answered::Simple(false) => Verdict::ImplicitDeny,
        };
        match verdict {
            Verdict::Allow => {}
            Verdict::ExplicitDeny | Verdict::ImplicitDeny if http_api => {
                return Err(Reply::http_api(403, "Forbidden"))
            }
            Verdict::ExplicitDeny => {
                return Err(Reply::gateway(
                    403,
                    "AccessDeniedException",
                    json!({"Message": "User is not authorized to access this resource with an explicit deny"}),
                )
                .refused_by(&result.context))
            }
            Verdict::ImplicitDeny => {
                return Err(Reply::gateway(
                    403,
                    "AccessDeniedException",
                    json!({"Message": "User is not authorized to access this resource"}),
                )
                .refused_by(&result.context))
            }
        }
        let mut context = result.context.clone();
        if let Answered::Policy { principal_id, .. } = &result.verdict {
            context.insert("principalId".into(), json!(principal_id));
        }
        if !http_api {
            context.insert("integrationLatency".into(), json!(0));
        }
        Ok(context)
    }

    /// API Gateway's 401, in the API's kind's shape.
    fn unauthorized(&self) -> Reply {
        if self.is_http_api() {
            Reply::http_api(401, "Unauthorized")
        } else {
            Reply::unauthorized()
        }
    }

    /// Invokes the authorizer (a cache miss) and checks its answer.
    async fn call_authorizer(
        &self,
        call: &Call<'_>,
        method_arn: &str,
        identity: Vec<String>,
    ) -> Result<AuthorizerResult, Reply> {
        let simple = match self.config.api.kind {
            ApiKind::Rest => None,
            ApiKind::Http { simple_responses } => Some(simple_responses),
        };
        let event = match simple {
            None => self.authorizer_event(call, method_arn),
            Some(_) => self.authorizer_event_v2(call, method_arn, identity),
        };
        self.authorizer_calls.fetch_add(1, Ordering::Relaxed);
        let invoked = self
            .functions
            .invoke(
                &self.config.api.authorizer.function,
                &event,
                self.config.integration_timeout,
            )
            .await;
        let parsed = match invoked {
            Ok(Invoked::Response(v)) if simple == Some(true) => AuthorizerResult::simple(v),
            Ok(Invoked::Response(v)) => AuthorizerResult::parse(v),
            Ok(Invoked::FunctionError { message, .. }) if message == "Unauthorized" => {
                return Err(self.unauthorized())
            }
            Ok(Invoked::FunctionError { message, .. }) => {
                Err(format!("authorizer error: {message}"))
            }
            Err(e) => Err(e.to_string()),
        };
        parsed.map_err(|reason| {
            tracing::warn!(%reason, "authorizer failed: 500");
            if simple.is_some() {
                Reply::http_api(500, "Internal Server Error")
            } else {
                Reply::authorizer_failure()
            }
        })
    }

    /// The identity sources' values (the cache key), or `None` when one is
    /// missing or empty (API Gateway's 401 without calling the authorizer).
    fn identity_values(&self, call: &Call<'_>) -> Option<Vec<String>> {
        let mut parts = Vec::new();
        for source in &self.config.api.authorizer.identity {
            let value = match source {
                IdentitySource::Header(name) => call
                    .request
                    .headers
                    .get(name.as_str())
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
                IdentitySource::QueryString(name) => {
                    call.query.get(name).and_then(|v| v.last()).cloned()
                }
                IdentitySource::StageVariable(_) => None,
                IdentitySource::Context(name) => Some(match name.as_str() {
                    "path" => call.context_path.clone(),
                    "resourcePath" => call.matched.route.resource.clone(),
                    "httpMethod" => call.method.clone(),
                    "stage" => self.config.api.stage.clone(),
                    "identity.sourceIp" => call.request.source_ip.clone(),
                    _ => resource_id(&call.matched.route.resource),
                }),
            };
            match value {
                Some(v) if !v.trim().is_empty() => parts.push(v),
                _ => return None,
            }
        }
        Some(parts)
    }

    fn authorizer_event(&self, call: &Call<'_>, method_arn: &str) -> Value {
        let route = call.matched.route;
        let mut identity = ApiGatewayCustomAuthorizerRequestTypeRequestIdentity::default();
        identity.source_ip = Some(call.request.source_ip.clone());
        let mut context = ApiGatewayCustomAuthorizerRequestTypeRequestContext::default();
        context.path = Some(call.context_path.clone());
        context.account_id = Some(self.config.account_id.clone());
        context.resource_id = Some(resource_id(&route.resource));
        context.stage = Some(self.config.api.stage.clone());
        context.request_id = Some(call.request_id.clone());
        context.identity = Some(identity);
        context.resource_path = Some(route.resource.clone());
        context.http_method = call.method.parse().ok();
        context.apiid = Some(self.config.api_id.clone());
        let mut event = ApiGatewayCustomAuthorizerRequestTypeRequest::default();
        event.type_ = Some("REQUEST".into());
        event.method_arn = Some(method_arn.to_string());
        event.resource = Some(route.resource.clone());
        event.path = Some(call.path.to_string());
        event.http_method = call.method.parse().ok();
        event.headers = call.request.headers.clone();
        event.multi_value_headers = call.request.headers.clone();
        event.query_string_parameters = QueryMap::from(call.query.clone());
        event.multi_value_query_string_parameters = QueryMap::from(call.query.clone());
        event.path_parameters = call.matched.path_parameters.clone();
        event.request_context = context;
        serde_json::to_value(event).expect("an authorizer event serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(statements: Value, context: Value) -> Result<AuthorizerResult, String> {
        AuthorizerResult::parse(json!({
            "principalId": "u1",
            "policyDocument": {"Version": "2012-10-17", "Statement": statements},
            "context": context,
        }))
    }

    #[test]
    fn malformed_authorizer_answers_are_refused() {
        let ok = json!([{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": "*"}]);
        let accepted = result(ok.clone(), json!({"tenantId": "T", "n": 1, "b": true})).unwrap();
        assert!(
            matches!(&accepted.verdict, Answered::Policy { principal_id, .. } if principal_id == "u1")
        );
        assert_eq!(accepted.context["n"], 1);
        assert!(result(ok.clone(), json!({"roles": ["a"]}))
            .unwrap_err()
            .contains("roles"));
        assert!(result(ok.clone(), json!("text")).is_err());
        assert!(result(
            json!([{"Action": "execute-api:Invoke", "Resource": "*"}]),
            Value::Null
        )
        .unwrap_err()
        .contains("Effect"));
        assert!(AuthorizerResult::parse(json!({"policyDocument": {"Statement": ok}})).is_err());
    }

    #[test]
    fn the_answers_policy_is_the_one_evaluated() {
        let arn = "arn:aws:execute-api:r:1:api/prod/GET/tenants/T/members";
        let allow = result(
            json!([{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": ["arn:aws:execute-api:r:1:api/prod/GET/tenants/T/*"]}]),
            Value::Null,
        )
        .unwrap();
        let policy = |r: &AuthorizerResult| match &r.verdict {
            Answered::Policy { policy, .. } => policy.clone(),
            Answered::Simple(_) => panic!("a policy answer"),
        };
        assert_eq!(policy(&allow).evaluate(iam::INVOKE, arn), Verdict::Allow);
        let deny = result(
            json!([{"Action": "execute-api:Invoke", "Effect": "Deny", "Resource": "*"}]),
            Value::Null,
        )
        .unwrap();
        assert_eq!(
            policy(&deny).evaluate(iam::INVOKE, arn),
            Verdict::ExplicitDeny
        );
    }
}
