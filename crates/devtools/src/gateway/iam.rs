//! IAM evaluation of the authorizer's policy for `execute-api:Invoke`,
//! written from AWS's documented rules and sharing no code with the
//! authorizer that builds the policy (a bug in a shared matcher would pass
//! both sides).
//!
//! The rules: each statement has an `Effect` (`Allow` or `Deny`), an
//! `Action` and a `Resource`, each a string or a list of strings. A
//! statement applies when one of its actions matches the action and one of
//! its resources matches the method ARN. An explicit Deny wins over any
//! Allow; without an applying Allow the request is implicitly denied. In
//! both, `*` matches any run of characters (`/` included, or none) and `?`
//! exactly one; actions compare case-insensitively, resources exactly.

use serde::Deserialize;

/// The action API Gateway checks for a method call.
pub const INVOKE: &str = "execute-api:Invoke";

/// A policy document's statements (`Version` is not read).
#[derive(Debug, Clone, Deserialize)]
pub struct Policy {
    #[serde(rename = "Statement")]
    statements: Vec<Statement>,
}

/// A statement with a key this evaluator does not implement (`Condition`,
/// `NotAction`, `NotResource`, `Principal`) does not parse: the gateway
/// answers 500 rather than Allow on what it cannot evaluate.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct Statement {
    #[serde(rename = "Sid", default)]
    _sid: Option<String>,
    effect: Effect,
    action: OneOrMany,
    resource: OneOrMany,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum Effect {
    Allow,
    Deny,
}

/// A string or a list of strings, as `Action` and `Resource` may be.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn any(&self, f: impl Fn(&str) -> bool) -> bool {
        match self {
            Self::One(s) => f(s),
            Self::Many(list) => list.iter().any(|s| f(s)),
        }
    }
}

/// The outcome of an evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    ExplicitDeny,
    ImplicitDeny,
}

impl Policy {
    /// Evaluates `action` on `resource`: an explicit Deny wins, then an
    /// Allow, otherwise an implicit deny.
    pub fn evaluate(&self, action: &str, resource: &str) -> Verdict {
        let applying = |effect| {
            self.statements.iter().any(|s| {
                s.effect == effect
                    && s.action.any(|p| action_matches(p, action))
                    && s.resource.any(|p| wildcard_matches(p, resource))
            })
        };
        if applying(Effect::Deny) {
            Verdict::ExplicitDeny
        } else if applying(Effect::Allow) {
            Verdict::Allow
        } else {
            Verdict::ImplicitDeny
        }
    }
}

/// Action names are case-insensitive (`EXECUTE-API:invoke` is
/// `execute-api:Invoke`), with the same wildcards as resources.
fn action_matches(pattern: &str, action: &str) -> bool {
    wildcard_matches(&pattern.to_ascii_lowercase(), &action.to_ascii_lowercase())
}

/// `*` matches any run of characters, `?` exactly one, any other character
/// itself. Runs the pattern over the text keeping every text position the
/// pattern read so far can have reached.
fn wildcard_matches(pattern: &str, text: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    let mut reached = vec![false; text.len() + 1];
    reached[0] = true;
    for p in pattern.chars() {
        let mut next = vec![false; text.len() + 1];
        match p {
            '*' => {
                let mut any = false;
                for (i, r) in reached.iter().enumerate() {
                    any |= *r;
                    next[i] = any;
                }
            }
            _ => {
                for (i, c) in text.iter().enumerate() {
                    next[i + 1] = reached[i] && (p == '?' || p == *c);
                }
            }
        }
        reached = next;
    }
    reached[text.len()]
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    const ARN: &str = "arn:aws:execute-api:r:1:api/prod/GET/tenants/T/members";

    fn policy(statements: Value) -> Policy {
        serde_json::from_value(json!({"Version": "2012-10-17", "Statement": statements}))
            .expect("a policy")
    }

    #[test]
    fn a_statement_with_a_key_it_cannot_evaluate_is_refused_not_ignored() {
        let allow = json!({"Effect": "Allow", "Action": INVOKE, "Resource": "*"});
        let parse = |statement: Value| {
            serde_json::from_value::<Policy>(
                json!({"Version": "2012-10-17", "Statement": [statement]}),
            )
        };
        assert!(parse(allow.clone()).is_ok());
        let mut with_sid = allow.clone();
        with_sid["Sid"] = json!("one");
        assert!(parse(with_sid).is_ok());
        for key in ["Condition", "NotResource", "NotAction", "Principal"] {
            let mut statement = allow.clone();
            statement[key] = json!({"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}});
            assert!(parse(statement).is_err(), "{key} was ignored");
        }
    }

    fn invoke(statements: Value, arn: &str) -> Verdict {
        policy(statements).evaluate(INVOKE, arn)
    }

    #[test]
    fn policies_are_evaluated_like_iam() {
        let allow = policy(
            json!([{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": ["arn:aws:execute-api:r:1:api/prod/GET/tenants/T/*"]}]),
        );
        assert_eq!(allow.evaluate(INVOKE, ARN), Verdict::Allow);
        assert_eq!(
            allow.evaluate(
                INVOKE,
                "arn:aws:execute-api:r:1:api/prod/GET/tenants/U/members"
            ),
            Verdict::ImplicitDeny
        );
        let both = policy(json!([
            {"Action": "*", "Effect": "Allow", "Resource": "*"},
            {"Action": "execute-api:*", "Effect": "Deny", "Resource": [ARN]}
        ]));
        assert_eq!(
            both.evaluate(INVOKE, ARN),
            Verdict::ExplicitDeny,
            "Deny wins"
        );
        let other_action = policy(
            json!([{"Action": "execute-api:ManageConnections", "Effect": "Allow", "Resource": "*"}]),
        );
        assert_eq!(other_action.evaluate(INVOKE, ARN), Verdict::ImplicitDeny);
    }

    #[test]
    fn an_explicit_deny_beats_any_allow_in_either_order() {
        let allow = json!({"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": ARN});
        let deny = json!({"Action": "execute-api:Invoke", "Effect": "Deny", "Resource": "arn:aws:execute-api:r:1:api/prod/*"});
        assert_eq!(
            invoke(json!([allow.clone(), deny.clone()]), ARN),
            Verdict::ExplicitDeny
        );
        assert_eq!(
            invoke(json!([deny.clone(), allow]), ARN),
            Verdict::ExplicitDeny
        );
        assert_eq!(
            invoke(json!([deny]), ARN),
            Verdict::ExplicitDeny,
            "a Deny alone is explicit too"
        );
    }

    #[test]
    fn without_an_applying_allow_the_deny_is_implicit() {
        assert_eq!(invoke(json!([]), ARN), Verdict::ImplicitDeny);
        let deny_elsewhere = json!([{"Action": "execute-api:Invoke", "Effect": "Deny", "Resource": "arn:aws:execute-api:r:1:api/prod/POST/*"}]);
        assert_eq!(invoke(deny_elsewhere, ARN), Verdict::ImplicitDeny);
        let allow_elsewhere = json!([{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": "arn:aws:execute-api:r:1:api/test/*"}]);
        assert_eq!(invoke(allow_elsewhere, ARN), Verdict::ImplicitDeny);
    }

    #[test]
    fn a_question_mark_is_one_character_a_star_any_run() {
        let allow = |resource: &str| json!([{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": resource}]);
        let one = "arn:aws:execute-api:r:1:api/prod/GET/tenants/?/members";
        assert_eq!(invoke(allow(one), ARN), Verdict::Allow);
        for arn in [
            "arn:aws:execute-api:r:1:api/prod/GET/tenants/TT/members",
            "arn:aws:execute-api:r:1:api/prod/GET/tenants//members",
        ] {
            assert_eq!(invoke(allow(one), arn), Verdict::ImplicitDeny, "{arn}");
        }
        let any = "arn:aws:execute-api:r:1:api/prod/GET/tenants/*/members";
        for arn in [
            ARN,
            "arn:aws:execute-api:r:1:api/prod/GET/tenants/TT/members",
            "arn:aws:execute-api:r:1:api/prod/GET/tenants//members",
            "arn:aws:execute-api:r:1:api/prod/GET/tenants/a/b/members",
        ] {
            assert_eq!(invoke(allow(any), arn), Verdict::Allow, "{arn}");
        }
        assert_eq!(
            invoke(allow("arn:aws:execute-api:r:1:api/prod/*"), ARN),
            Verdict::Allow,
            "a star spans slashes"
        );
        assert_eq!(
            invoke(
                allow("arn:aws:execute-api:r:1:api/prod/GET/tenants/T/member?"),
                ARN
            ),
            Verdict::Allow
        );
        assert_eq!(
            invoke(
                allow("arn:aws:execute-api:r:1:api/prod/GET/tenants/T/members?"),
                ARN
            ),
            Verdict::ImplicitDeny,
            "a ? needs a character"
        );
        assert_eq!(
            invoke(allow("arn:aws:execute-api:r:1:api/prod/GET/tenants/T"), ARN),
            Verdict::ImplicitDeny,
            "no wildcard: the whole ARN"
        );
        assert!(wildcard_matches("a*b?c", "a/x/b/c"));
        assert!(wildcard_matches("**", ""));
        assert!(!wildcard_matches("?", ""));
        assert!(
            wildcard_matches("é?", "éü"),
            "? is one character, not one byte"
        );
    }

    #[test]
    fn actions_and_resources_may_be_lists() {
        let listed = json!([{
            "Action": ["execute-api:ManageConnections", "execute-api:Invoke"],
            "Effect": "Allow",
            "Resource": ["arn:aws:execute-api:r:1:api/prod/POST/*", ARN]
        }]);
        assert_eq!(invoke(listed, ARN), Verdict::Allow);
        let denied = json!([
            {"Action": "*", "Effect": "Allow", "Resource": "*"},
            {"Action": ["s3:GetObject", "execute-api:*"], "Effect": "Deny", "Resource": ["x", ARN]}
        ]);
        assert_eq!(invoke(denied, ARN), Verdict::ExplicitDeny);
        let none_match = json!([{
            "Action": ["execute-api:ManageConnections", "s3:*"],
            "Effect": "Allow",
            "Resource": ["*"]
        }]);
        assert_eq!(invoke(none_match, ARN), Verdict::ImplicitDeny);
        let empty = json!([{"Action": [], "Effect": "Allow", "Resource": ["*"]}]);
        assert_eq!(invoke(empty, ARN), Verdict::ImplicitDeny);
    }

    #[test]
    fn only_actions_matching_invoke_allow() {
        for action in [
            "execute-api:Invoke",
            "execute-api:*",
            "*",
            "execute-api:Inv?ke",
        ] {
            let p = json!([{"Action": action, "Effect": "Allow", "Resource": "*"}]);
            assert_eq!(invoke(p, ARN), Verdict::Allow, "{action}");
        }
        for action in [
            "execute-api:ManageConnections",
            "execute-api:InvokeX",
            "execute-api",
            "s3:*",
            "execute-api:Invoke ",
        ] {
            let p = json!([{"Action": action, "Effect": "Allow", "Resource": "*"}]);
            assert_eq!(invoke(p, ARN), Verdict::ImplicitDeny, "{action}");
        }
    }

    #[test]
    fn resources_match_case_sensitively_actions_do_not() {
        for resource in [
            "arn:aws:execute-api:r:1:api/prod/get/tenants/T/members",
            "arn:aws:execute-api:r:1:api/prod/GET/tenants/t/members",
            "arn:aws:execute-api:r:1:api/prod/GET/Tenants/*",
            "ARN:AWS:EXECUTE-API:R:1:API/PROD/GET/TENANTS/T/MEMBERS",
        ] {
            let p =
                json!([{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": resource}]);
            assert_eq!(invoke(p, ARN), Verdict::ImplicitDeny, "{resource}");
        }
        let p = json!([{"Action": "EXECUTE-API:invoke", "Effect": "Allow", "Resource": ARN}]);
        assert_eq!(
            invoke(p, ARN),
            Verdict::Allow,
            "IAM action names ignore case"
        );
    }

    #[test]
    fn statements_need_an_effect_an_action_and_a_resource() {
        let parse = |statement: Value| {
            serde_json::from_value::<Policy>(json!({"Statement": [statement]}))
                .map_err(|e| e.to_string())
        };
        assert!(parse(json!({"Action": "*", "Resource": "*"}))
            .unwrap_err()
            .contains("Effect"));
        assert!(parse(json!({"Effect": "allow", "Action": "*", "Resource": "*"})).is_err());
        assert!(parse(json!({"Effect": "Allow", "Resource": "*"})).is_err());
        assert!(parse(json!({"Effect": "Allow", "Action": "*"})).is_err());
        assert!(parse(json!({"Effect": "Allow", "Action": 1, "Resource": "*"})).is_err());
        assert!(parse(json!({"Effect": "Allow", "Action": "*", "Resource": "*"})).is_ok());
        assert!(serde_json::from_value::<Policy>(json!({"Statement": {}})).is_err());
    }
}
