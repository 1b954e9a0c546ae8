//! Who may do what: the route rules (which permission a route needs), the
//! Cedar policies (the schema, the check of a statement before it is
//! stored, the decision over the set), the delegation ceiling (what a
//! caller may give), and the matching of IAM policy document ARNs. Pure
//! logic: uses `model`, `error` and `runtime`'s configuration, never the
//! table.

pub mod cedar;
pub mod ceiling;
pub mod iam;
pub mod route_rules;
