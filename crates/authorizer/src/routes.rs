//! The route rules the authorizer decides with: the shipped rules file
//! (parsed in `authz_core::policy::route_rules`), the lookup of a request's rule,
//! and the IAM policy plan worked out once for them. Unmatched routes deny.

pub use authz_core::policy::route_rules::{
    Rule, RulesError, SelfRule, CALLER, INVITEE, TENANT_PARAM,
};

use std::collections::HashMap;

use crate::iam_policy::PolicyPlan;

/// The checked rules and their policy plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteRules {
    rules: Vec<Rule>,
    /// How policies are built for these rules, worked out once.
    plan: PolicyPlan,
    /// The rules of each resource template, by index in file order.
    by_resource: HashMap<String, Vec<usize>>,
}

impl RouteRules {
    pub fn parse(json: &str) -> Result<Self, RulesError> {
        Ok(Self::of(authz_core::policy::route_rules::parse(json)?))
    }

    pub fn load(path: &str) -> Result<Self, RulesError> {
        Ok(Self::of(authz_core::policy::route_rules::load(path)?))
    }

    fn of(rules: Vec<Rule>) -> Self {
        let plan = PolicyPlan::new(&rules);
        let mut by_resource: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, rule) in rules.iter().enumerate() {
            by_resource
                .entry(rule.resource.clone())
                .or_default()
                .push(i);
        }
        Self {
            rules,
            plan,
            by_resource,
        }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn plan(&self) -> &PolicyPlan {
        &self.plan
    }

    /// The rule for a request: an exact method match wins over `*`.
    pub fn find(&self, method: &str, resource: &str) -> Option<&Rule> {
        let of_resource = || {
            self.by_resource
                .get(resource)
                .into_iter()
                .flatten()
                .map(|&i| &self.rules[i])
        };
        of_resource()
            .find(|r| r.method.eq_ignore_ascii_case(method))
            .or_else(|| of_resource().find(|r| r.method == "*"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    use authz_core::model::values::UserId;

    #[test]
    fn the_shipped_rules_parse() {
        let rules =
            RouteRules::parse(include_str!("../../../route_rules/provisioning.json")).unwrap();
        let members = rules
            .find("PUT", "/tenants/{tenantId}/members/{userId}")
            .unwrap();
        assert!(members.is_tenant_scoped());
        assert!(!rules.find("POST", "/tenants").unwrap().is_tenant_scoped());
        assert!(rules.find("GET", "/unknown").is_none());
    }

    #[test]
    fn a_self_rule_matches_only_the_callers_own_id() {
        let rules = RouteRules::parse(
            r#"{"routes":[{"method":"GET","resource":"/users/{userId}/emails","permission":"user:read","self":"userId"}]}"#,
        )
        .unwrap();
        let rule = rules.find("GET", "/users/{userId}/emails").unwrap();
        let me = UserId::generate();
        let params = |v: String| HashMap::from([("userId".to_string(), v)]);
        assert!(rule.is_self(&me, &params(me.to_string())));
        assert!(rule.is_self(&me, &params(me.to_string().to_lowercase())));
        assert!(!rule.is_self(&me, &params(UserId::generate().to_string())));
        assert!(!rule.is_self(&me, &params("*".into())));
        assert!(!rule.is_self(&me, &HashMap::new()));
        let shipped =
            RouteRules::parse(include_str!("../../../route_rules/provisioning.json")).unwrap();
        assert!(shipped
            .find("PATCH", "/users/{userId}")
            .unwrap()
            .self_rule
            .is_none());
        let accept = shipped
            .find("POST", "/invitations/{invitationId}/accept")
            .unwrap();
        assert_eq!(accept.self_rule, Some(SelfRule::Invitee));
        assert!(accept.is_self(&me, &HashMap::new()));
    }

    #[test]
    fn a_caller_rule_is_any_callers_own() {
        let rules = RouteRules::parse(
            r#"{"routes":[{"method":"GET","resource":"/users/me","permission":"user:read","self":"caller"}]}"#,
        )
        .unwrap();
        let rule = rules.find("GET", "/users/me").unwrap();
        assert_eq!(rule.self_rule, Some(SelfRule::Caller));
        assert!(rule.is_self(&UserId::generate(), &HashMap::new()));
        let shipped =
            RouteRules::parse(include_str!("../../../route_rules/provisioning.json")).unwrap();
        for (method, resource) in [
            ("GET", "/users/me"),
            ("POST", "/authorize"),
            ("POST", "/authorize/batch"),
        ] {
            let rule = shipped.find(method, resource).unwrap();
            assert_eq!(
                rule.self_rule,
                Some(SelfRule::Caller),
                "{method} {resource}"
            );
        }
        assert_eq!(
            shipped.find("POST", "/users/me").unwrap().self_rule,
            Some(SelfRule::SignUp)
        );
    }

    #[test]
    fn star_methods_are_a_fallback() {
        let rules = RouteRules::parse(
            r#"{"routes":[{"method":"*","resource":"/a","permission":"a:any"},{"method":"get","resource":"/a","permission":"a:read"}]}"#,
        )
        .unwrap();
        assert_eq!(
            rules.find("GET", "/a").unwrap().permission.as_str(),
            "a:read"
        );
        assert_eq!(
            rules.find("DELETE", "/a").unwrap().permission.as_str(),
            "a:any"
        );
    }

    #[test]
    fn invalid_files_say_what_is_wrong() {
        for (json, needle) in [
            ("not json", "expected"),
            (r#"{"rules": []}"#, "unknown field"),
            (
                r#"{"routes":[{"method":"FETCH","resource":"/a","permission":"a:b"}]}"#,
                "routes[0]: unknown method",
            ),
            (
                r#"{"routes":[{"method":"GET","resource":"a","permission":"a:b"}]}"#,
                "must start with '/'",
            ),
            (
                r#"{"routes":[{"method":"GET","resource":"/a/{}","permission":"a:b"}]}"#,
                "bad parameter",
            ),
            (
                r#"{"routes":[{"method":"GET","resource":"/a","permission":"A:B"}]}"#,
                "routes[0]: permissions",
            ),
            (
                r#"{"routes":[{"method":"GET","resource":"/a","permission":"a:*"}]}"#,
                "concrete",
            ),
            (
                r#"{"routes":[{"method":"GET","resource":"/a","permission":"a:b"},{"method":"GET","resource":"/a","permission":"a:c"}]}"#,
                "routes[1]: duplicate",
            ),
            (
                r#"{"routes":[{"method":"GET","resource":"/a/{id}","permission":"a:b","self":"userId"}]}"#,
                "routes[0]: self \"userId\" must be \"invitee\", \"caller\", \"signup\" or name a path parameter",
            ),
            (
                r#"{"routes":[{"method":"GET","resource":"/tenants/{tenantId}","permission":"a:b","self":"tenantId"}]}"#,
                "other than tenantId",
            ),
        ] {
            let err = RouteRules::parse(json).unwrap_err().to_string();
            assert!(err.contains(needle), "{json}: {err}");
        }
    }
}
