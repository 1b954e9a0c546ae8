//! What must hold of a request for a policy to match, read once from its
//! scope and the first test of its first `when`, and checked per decision
//! without Cedar: a policy whose precondition is surely false is not handed to
//! Cedar at all, so a decision costs what the policies that can match
//! cost, not every policy that names its action.
//!
//! Cedar evaluates a policy's scope first (which never errors), then its
//! conditions in order, `&&` from the left, stopping at the first false.
//! So a precondition may come only from the scope and from the leftmost test of
//! the first condition: of its `&&` chain when that is a `when` (false
//! there, the policy cannot match), and of its `||` chain when it is an
//! `unless` (true there, the policy cannot match); and a test decides
//! only where Cedar would answer it without an error: an attribute
//! every principal has, a context field every request carries, an address
//! that parses as Cedar parses it. Anything else is not a precondition, and the
//! policy is evaluated as before. The equivalence test over the whole set
//! (`the_index_decides_as_the_whole_set_does`) holds it to that.

use std::net::IpAddr;

use cedar_policy::{PrincipalConstraint, ResourceConstraint};
use serde_json::Value;

use super::entities::{Facts, Subject};
use crate::model::values::{RoleId, UserId};

/// One test a request must pass for the policy to match.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Precondition {
    /// `principal == User::"<id>"` (`None`: an id no user's entity has,
    /// which never matches).
    User(Option<UserId>),
    /// `principal in Role::"<id>"`: a role held here (`None`: as above).
    Role(Option<RoleId>),
    /// `resource is Tenant` (a tenant's route).
    OnTenant,
    /// `resource is Platform` or `== Platform::"platform"` (a global route).
    OnPlatform,
    /// `principal.<status|email|emailDomain> == "<literal>"`.
    Principal(&'static str, String),
    /// `principal.roles.contains("<id>")` (`None`: as above).
    HoldsRole(Option<RoleId>),
    /// `principal.permissions.contains("<permission>")`.
    HoldsPermission(String),
    /// `context.<method|path|route> == "<literal>"`.
    Context(&'static str, String),
    /// `context.sourceIp.isInRange(ip("<range>"))`.
    InRange(IpRange),
    /// The first condition is an `unless` whose leftmost `||` operand is
    /// this test: where it surely holds, the policy does not match
    /// (`unless { context.sourceIp.isInRange(ip("10.0.0.0/8")) }` from the
    /// office network).
    Not(Box<Precondition>),
}

/// An address range as Cedar's `ip()` reads it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct IpRange {
    addr: IpAddr,
    prefix: u8,
}

impl IpRange {
    /// As Cedar parses `ip(text)`; `None` for what Cedar would refuse or
    /// this does not read the same way (then no precondition is made).
    fn parse(text: &str) -> Option<Self> {
        if text.contains(':') && text.contains('.') {
            return None;
        }
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => {
                let addr: IpAddr = addr.parse().ok()?;
                let digits_ok = !prefix.is_empty()
                    && prefix.bytes().all(|b| b.is_ascii_digit())
                    && (prefix == "0" || !prefix.starts_with('0'))
                    && prefix.len() <= 3;
                if !digits_ok {
                    return None;
                }
                let prefix: u8 = prefix.parse().ok()?;
                (addr, prefix)
            }
            None => {
                let addr: IpAddr = text.parse().ok()?;
                (addr, if addr.is_ipv4() { 32 } else { 128 })
            }
        };
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (prefix <= max).then_some(Self { addr, prefix })
    }

    /// Whether `self` lies within `other`, as Cedar's `isInRange` answers.
    fn within(&self, other: &IpRange) -> bool {
        fn bounds(value: u128, prefix: u32, bits: u32) -> (u128, u128) {
            let all = if bits == 128 {
                u128::MAX
            } else {
                (1u128 << bits) - 1
            };
            let host = all.checked_shr(prefix).unwrap_or(0);
            ((value & !host) & all, (value | host) & all)
        }
        let (a, b, bits) = match (self.addr, other.addr) {
            (IpAddr::V4(a), IpAddr::V4(b)) => (u32::from(a) as u128, u32::from(b) as u128, 32),
            (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
            _ => return false,
        };
        let (self_low, self_high) = bounds(a, self.prefix.into(), bits);
        let (other_low, other_high) = bounds(b, other.prefix.into(), bits);
        other_low <= self_low && self_high <= other_high
    }
}

/// What a decision checks preconditions against: the subject, the facts, and the
/// source address as Cedar would read it (`None` when it would not, or
/// reads it some other way: no address precondition is then surely false).
pub(super) struct Asked<'a> {
    pub(super) subject: Subject<'a>,
    pub(super) facts: &'a Facts,
    source: std::cell::OnceCell<Option<IpRange>>,
}

impl<'a> Asked<'a> {
    pub(super) fn new(subject: Subject<'a>, facts: &'a Facts) -> Self {
        Self {
            subject,
            facts,
            source: Default::default(),
        }
    }

    fn source(&self) -> Option<&IpRange> {
        self.source
            .get_or_init(|| {
                IpRange::parse(&self.facts.source_ip)
                    .filter(|_| !self.facts.source_ip.contains('/'))
            })
            .as_ref()
    }
}

impl Precondition {
    /// False only when the policy surely does not match `asked`.
    pub(super) fn may_hold(&self, asked: &Asked<'_>) -> bool {
        match self {
            Precondition::Not(test) => !test.surely_holds(asked),
            test => test.tested(asked),
        }
    }

    /// True only when the test surely holds of `asked` (Cedar evaluates it
    /// to true, without an error).
    fn surely_holds(&self, asked: &Asked<'_>) -> bool {
        match self {
            // An address Cedar reads otherwise proves nothing.
            Precondition::InRange(range) => asked.source().is_some_and(|s| s.within(range)),
            Precondition::Not(_) => false,
            test => test.tested(asked),
        }
    }

    /// The test's outcome, where it is exact; an address Cedar reads
    /// otherwise may be in any range.
    fn tested(&self, asked: &Asked<'_>) -> bool {
        let subject = &asked.subject;
        match self {
            Precondition::Not(test) => !test.surely_holds(asked),
            Precondition::User(id) => *id == Some(subject.user.user_id),
            Precondition::Role(id) | Precondition::HoldsRole(id) => {
                id.is_some_and(|id| subject.roles.contains(&id))
            }
            Precondition::OnTenant => subject.tenant.is_some(),
            Precondition::OnPlatform => subject.tenant.is_none(),
            Precondition::Principal(attr, literal) => {
                let email = subject.user.email.as_str();
                let value = match *attr {
                    "status" => subject.user.status.as_str(),
                    "email" => email,
                    _ => email.rsplit_once('@').map_or("", |(_, d)| d),
                };
                value == literal
            }
            Precondition::HoldsPermission(permission) => {
                subject.permissions.iter().any(|p| p.as_str() == permission)
            }
            Precondition::Context(field, literal) => {
                let value = match *field {
                    "method" => &asked.facts.method,
                    "path" => &asked.facts.path,
                    _ => &asked.facts.route,
                };
                value == literal
            }
            Precondition::InRange(range) => {
                asked.source().is_none_or(|source| source.within(range))
            }
        }
    }

    /// The preconditions of `policy`: its scope's, and its first condition's
    /// leftmost test: of its `&&` chain when that condition is a `when`,
    /// negated, of its `||` chain when it is an `unless`.
    pub(super) fn of(policy: &cedar_policy::Policy) -> Vec<Precondition> {
        let mut preconditions = Vec::new();
        match policy.principal_constraint() {
            PrincipalConstraint::Eq(u) | PrincipalConstraint::In(u)
                if u.type_name().to_string() == "User" =>
            {
                preconditions.push(Precondition::User(exactly(
                    u.id().unescaped(),
                    UserId::parse,
                )))
            }
            PrincipalConstraint::In(u) if u.type_name().to_string() == "Role" => preconditions
                .push(Precondition::Role(exactly(
                    u.id().unescaped(),
                    RoleId::parse,
                ))),
            _ => {}
        }
        match policy.resource_constraint() {
            ResourceConstraint::Is(t) | ResourceConstraint::IsIn(t, _) => {
                match t.to_string().as_str() {
                    "Tenant" => preconditions.push(Precondition::OnTenant),
                    "Platform" => preconditions.push(Precondition::OnPlatform),
                    _ => {}
                }
            }
            ResourceConstraint::Eq(u) if u.type_name().to_string() == "Platform" => {
                preconditions.push(Precondition::OnPlatform)
            }
            _ => {}
        }
        if let Ok(json) = policy.to_json() {
            let first = json
                .get("conditions")
                .and_then(|c| c.as_array())
                .and_then(|c| c.first());
            if let Some(condition) = first {
                let body = condition.get("body");
                match condition.get("kind").and_then(Value::as_str) {
                    Some("when") => {
                        if let Some(precondition) = body.and_then(|b| test(leftmost(b, "&&"))) {
                            preconditions.push(precondition);
                        }
                    }
                    Some("unless") => {
                        if let Some(precondition) = body.and_then(|b| test(leftmost(b, "||"))) {
                            preconditions.push(Precondition::Not(Box::new(precondition)));
                        }
                    }
                    _ => {}
                }
            }
        }
        preconditions
    }
}

/// The id `text` is, if it is one written exactly as entities carry ids
/// (a request's entities name them in that one spelling, so any other
/// text is an id no entity has).
fn exactly<I: ToString, E>(text: &str, parse: impl Fn(&str) -> Result<I, E>) -> Option<I> {
    parse(text).ok().filter(|id| id.to_string() == text)
}

/// The leftmost operand of a chain of `op` (`&&` or `||`): what Cedar
/// evaluates first, and alone when it decides the chain.
fn leftmost<'v>(body: &'v Value, op: &str) -> &'v Value {
    match body.get(op).and_then(|chain| chain.get("left")) {
        Some(left) => leftmost(left, op),
        None => body,
    }
}

/// `<var>.<attr>` in JSON form: the attribute of `principal` or `context`.
fn attribute_of<'v>(value: &'v Value, var: &str) -> Option<&'v str> {
    let access = value.get(".")?;
    (access.get("left")?.get("Var")? == var).then_some(())?;
    access.get("attr")?.as_str()
}

/// A string literal in JSON form.
fn literal(value: &Value) -> Option<&str> {
    value.get("Value")?.as_str()
}

/// The precondition a test makes, if it is one this module can check exactly.
fn test(body: &Value) -> Option<Precondition> {
    if let Some(eq) = body.get("==") {
        let (left, right) = (eq.get("left")?, eq.get("right")?);
        let (side, text) = match (literal(left), literal(right)) {
            (None, Some(text)) => (left, text),
            (Some(text), None) => (right, text),
            _ => return None,
        };
        if let Some(attr) = attribute_of(side, "principal") {
            let attr = ["status", "email", "emailDomain"]
                .into_iter()
                .find(|a| *a == attr)?;
            return Some(Precondition::Principal(attr, text.to_string()));
        }
        let field = attribute_of(side, "context")?;
        let field = ["method", "path", "route"]
            .into_iter()
            .find(|f| *f == field)?;
        return Some(Precondition::Context(field, text.to_string()));
    }
    if let Some(contains) = body.get("contains") {
        let (set, item) = (contains.get("left")?, contains.get("right")?);
        let attr = attribute_of(set, "principal")?;
        let item = literal(item)?;
        return match attr {
            "roles" => Some(Precondition::HoldsRole(exactly(item, RoleId::parse))),
            "permissions" => Some(Precondition::HoldsPermission(item.to_string())),
            _ => None,
        };
    }
    if let Some(args) = body.get("isInRange").and_then(|a| a.as_array()) {
        let [source, range] = args.as_slice() else {
            return None;
        };
        (attribute_of(source, "context")? == "sourceIp").then_some(())?;
        let text = range.get("ip")?.as_array()?.first().and_then(literal)?;
        return IpRange::parse(text).map(Precondition::InRange);
    }
    None
}
